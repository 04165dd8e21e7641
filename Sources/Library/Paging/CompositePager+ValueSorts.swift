extension CompositePager {
    /// A page of a value sort: the keyset after the cursor's (value, id) in every source,
    /// merged (see the type's rules).
    func valuePage(start: PageStart, limit: Int) throws -> ([ListedAlbum], PageCursor?) {
        let sort = query.sort
        var anchor = SortAnchor.start
        var dropped = 0
        switch start {
        case .first:
            break
        case let .offset(offset) where readers.count == 1 && filter.remainder == nil:
            anchor = .offset(offset)
        case let .offset(offset):
            // Merged from the start and dropped (an offset may walk); never past every album.
            dropped = min(offset, try readers.reduce(0) { $0 + (try $1.count()) })
        case let .cursor(cursor):
            guard let value = cursor.lastValue, let id = cursor.lastID else {
                throw LibraryError.invalidCursor("the cursor does not fit this sort; start again without a cursor")
            }
            anchor = .afterValue(value, id)
        }
        let wanted = dropped + limit + 1
        // Each source is read in batches, as the merge needs them: for n sources a page reads
        // about wanted / n rows of each (more of a source whose albums come first), not wanted.
        let batch = readers.count == 1 ? wanted : max(4, wanted / readers.count + 2)
        var sources = readers.map { SourceRun(reader: $0, from: anchor) }
        var merged: [(album: Album, source: Int)] = []
        var heads: [MergeKey?] = []
        for index in sources.indices {
            heads.append(try sources[index].head(filter: filter, sort: sort, batch: batch).map { MergeKey($0, sort.field) })
        }
        while merged.count < wanted {
            var best: Int?
            for source in heads.indices {
                guard let key = heads[source] else { continue }
                if let current = best, let bestKey = heads[current] {
                    if sort.descending ? bestKey.precedes(key) : key.precedes(bestKey) { best = source }
                } else {
                    best = source
                }
            }
            guard let source = best else { break }
            merged.append((sources[source].take(), source))
            guard merged.count < wanted else { break }
            heads[source] = try sources[source].head(filter: filter, sort: sort, batch: batch).map { MergeKey($0, sort.field) }
        }
        merged.removeFirst(min(dropped, merged.count))
        let more = merged.count > limit
        if more { merged.removeLast(merged.count - limit) }
        let items = merged.map { ListedAlbum(album: $0.album, index: nil, library: labels ? libraries[$0.source] : nil) }
        guard more, let end = merged.last?.album else { return (items, nil) }
        return (items, PageCursor(
            fingerprint: query.fingerprint, scope: scope, revision: revision,
            lastValue: SortValue.of(end, for: sort.field), lastID: end.id))
    }
}

/// An album's place in a value sort, computed once (folded text bytes or the number, then the
/// id bytes), so merging the sources' lists compares keys, not albums: the same order as
/// `AlbumSort.orders`.
private struct MergeKey {
    var text: [UInt8]
    var number: Int64
    var id: [UInt8]

    init(_ album: Album, _ field: AlbumSort.Field) {
        switch SortValue.of(album, for: field) {
        case let .text(value)?: (text, number) = (AlbumFilter.folded(value), 0)
        case let .integer(value)?: (text, number) = ([], value)
        case nil: (text, number) = ([], 0)
        }
        id = Array(album.id.rawValue.utf8)
    }

    /// Whether `self` comes before `other` in ascending order.
    func precedes(_ other: MergeKey) -> Bool {
        if number != other.number { return number < other.number }
        if text != other.text { return text.lexicographicallyPrecedes(other.text) }
        return id.lexicographicallyPrecedes(other.id)
    }

}

/// One source of a value-sorted page, read in batches from a keyset anchor.
private struct SourceRun {
    let reader: any AlbumStoreReader
    var from: SortAnchor
    var buffer: [Album] = []
    var position = 0
    var exhausted = false

    init(reader: any AlbumStoreReader, from: SortAnchor) {
        self.reader = reader
        self.from = from
    }

    /// The next album of this source (reading a batch when none is buffered), or nil at its end.
    mutating func head(filter: CombinedFilter, sort: AlbumSort, batch: Int) throws -> Album? {
        while position == buffer.count {
            guard !exhausted else { return nil }
            let rows = try reader.albums(matching: filter.store, sort: sort, from: from, limit: batch) ?? []
            buffer = rows.filter(filter.remainderMatches)
            position = 0
            if rows.count < batch { exhausted = true }
            if let end = rows.last, let value = SortValue.of(end, for: sort.field) { from = .afterValue(value, end.id) }
        }
        return buffer[position]
    }

    /// Removes and returns the head (call after `head` returned one).
    mutating func take() -> Album {
        position += 1
        return buffer[position - 1]
    }
}
