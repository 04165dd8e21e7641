/// Index addressing through a composite view (the seed's composite data source): a view index
/// is "decomposed" into a source and an index in that source, and "adduced" back.
///
/// A pure value over the album counts of the sources, in the view's source order, all taken
/// in one snapshot. Rules:
/// - The view's order is the sources' orders concatenated; view index `i` of an album in
///   source `s` at local index `l` is `offset(of: s) + l`.
/// - ``decompose(_:)`` addresses an existing album: `0 <= i < total`, never an empty source.
/// - ``insertion(at:)`` addresses a place to insert: an index inside a source inserts there; an
///   index exactly on a boundary between sources inserts **at the end of the earlier source**
///   (the first source whose end reaches it, which may be an empty source); an index past the
///   end appends to the last source. Either way the new album ends up at the view index asked
///   for (or at the end). A negative index is refused.
public struct CompositeIndex: Sendable, Equatable {
    /// The number of albums in each source, in view order.
    public let counts: [Int]
    /// `offsets[s]`: the view index of the first album of source `s` (the sum of the counts
    /// before it); `offsets.last` is the total.
    public let offsets: [Int]

    public init(counts: [Int]) {
        precondition(counts.allSatisfy { $0 >= 0 }, "counts are never negative")
        self.counts = counts
        var offsets: [Int] = [0]
        offsets.reserveCapacity(counts.count + 1)
        for count in counts { offsets.append(offsets[offsets.count - 1] + count) }
        self.offsets = offsets
    }

    /// The number of albums in the view.
    public var total: Int { offsets[offsets.count - 1] }

    /// The view index of the album at `local` in source `source` ("adduce").
    public func adduce(source: Int, local: Int) -> Int {
        offsets[source] + local
    }

    /// The source and local index of the album at view index `index` ("decompose"), or nil
    /// when `index` is outside `0..<total`. Empty sources are never the answer.
    public func decompose(_ index: Int) -> (source: Int, local: Int)? {
        guard index >= 0, index < total else { return nil }
        // The last source whose offset is <= index (binary search: sources are few, but the
        // rule is clearer as "the source whose range holds it").
        var low = 0, high = counts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if offsets[middle] <= index { low = middle } else { high = middle - 1 }
        }
        // Empty sources share their offset with the next source; taking the last source at
        // that offset skips them (its range holds `index`, as the next offset is past it).
        return (low, index - offsets[low])
    }

    /// Where an album inserted at view index `index` goes; see the type's rules.
    /// - Throws: `.indexOutOfRange` for a negative index, or when there is no source at all.
    public func insertion(at index: Int) throws(LibraryError) -> (source: Int, local: Int) {
        guard index >= 0, !counts.isEmpty else { throw .indexOutOfRange(index: index, count: total) }
        for source in counts.indices where index <= offsets[source + 1] {
            return (source, index - offsets[source])
        }
        let last = counts.count - 1
        return (last, counts[last])
    }
}
