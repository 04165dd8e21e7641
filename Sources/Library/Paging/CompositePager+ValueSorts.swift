import BlueLibraryAPI

extension CompositePager {
    /// A page of a value sort: the keyset after the cursor's (value, id) in every source,
    /// merged (see the type's rules).
    ///
    /// An offset is never merged from the start: on one source the store skips it (`.offset`);
    /// on several, ``OffsetSelection`` finds the album just before it by counting in the
    /// sources' sort indexes, and the page is the keyset page after that album (exactly the
    /// page a cursor there reads). Only a filter the store cannot apply whole (a remainder)
    /// makes an offset page merge from the start, and then it drops what it skips as it goes:
    /// memory stays bounded by the batch, whatever the offset.
    func valuePage(start: PageStart, limit: Int) throws -> ([ListedAlbum], PageCursor?) {
        let sort = query.sort
        let articles = try sortArticles(sort)
        var anchor = SortAnchor.start
        var skip = 0
        switch start {
        case .first:
            break
        case let .offset(offset) where readers.count == 1 && filter.remainder == nil:
            anchor = .offset(offset)
        case .offset(0):
            break
        case let .offset(offset) where filter.remainder == nil:
            let selection = OffsetSelection(readers: readers, articles: articles, filter: filter.store, sort: sort)
            guard let before = try selection.key(before: offset) else { return ([], nil) }
            anchor = .afterValue(before.value, before.id)
        case let .offset(offset):
            // Only the store's part of the filter can be counted: past every album it lets
            // through, the page is empty without a merge.
            let bound = offset == Int.max ? offset : offset + 1
            var passing = 0
            for reader in readers where passing <= offset {
                passing += try reader.count(matching: filter.store, sort: sort, in: .all, limit: bound)
            }
            guard passing > offset else { return ([], nil) }
            skip = offset
        case let .cursor(cursor):
            guard let value = cursor.lastValue, let id = cursor.lastID else {
                throw LibraryError.invalidCursor("the cursor does not fit this sort; start again without a cursor")
            }
            anchor = .afterValue(value, id)
            if cursor.lastArticles != nil, cursor.lastArticles != articles.first {
                // Made before the library's artist keys were remade with other articles: go on
                // after the album's new key, where it still is.
                for (index, reader) in readers.enumerated() {
                    guard let album = try reader.album(id: id),
                        let key = SortValue.of(album, for: sort.field, articles: articles[index], search: sort.search)
                    else { continue }
                    anchor = .afterValue(key, id)
                    break
                }
            }
        }
        let wanted = limit + 1
        // Each source is read in batches, as the merge needs them: for n sources a page reads
        // about wanted / n rows of each (more of a source whose albums come first), not wanted.
        // Albums skipped in the merge are read in batches of at most `maxSkipBatch` rows.
        let reading = min(skip, Self.maxSkipBatch) + wanted
        let batch = readers.count == 1 ? reading : max(4, reading / readers.count + 2)
        var sources = zip(readers, articles).map { SourceRun(reader: $0, articles: $1, from: anchor) }
        var merged: [(album: Album, source: Int)] = []
        var heads: [MergeKey?] = []
        for index in sources.indices {
            heads.append(try sources[index].head(filter: filter, sort: sort, batch: batch).map {
                MergeKey($0, sort, articles[index])
            })
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
            let album = sources[source].take()
            if skip > 0 {
                skip -= 1
            } else {
                merged.append((album, source))
                guard merged.count < wanted else { break }
            }
            heads[source] = try sources[source].head(filter: filter, sort: sort, batch: batch).map {
                MergeKey($0, sort, articles[source])
            }
        }
        let more = merged.count > limit
        if more { merged.removeLast(merged.count - limit) }
        let items = merged.map { ListedAlbum(album: $0.album, index: nil, library: labels ? libraries[$0.source] : nil) }
        guard more, let end = merged.last else { return (items, nil) }
        return (items, PageCursor(
            fingerprint: query.fingerprint, scope: scope, revision: revision,
            lastValue: SortValue.of(end.album, for: sort.field, articles: articles[end.source], search: sort.search), lastID: end.album.id,
            lastArticles: sort.field == .artist ? articles[end.source] : nil))
    }

    /// The articles of each source's artist keys for an artist sort (read in each reader's
    /// snapshot); for any other sort they play no part.
    private func sortArticles(_ sort: AlbumSort) throws -> [SortArticles] {
        guard sort.field == .artist else { return readers.map { _ in .standard } }
        return try readers.map { try $0.sortArticles() }
    }

    /// The most rows of a source one read of a remainder-filtered offset merge asks for.
    static let maxSkipBatch = 512
}

/// Finds the album at a given offset of a value order merged from several sources, without
/// reading the albums before it: rank selection over the sources' sort indexes.
///
/// Each source is a sorted list the store can count in (`count(matching:sort:in:limit:)`, an
/// index range) and read at a rank after a key (`albums(matching:sort:in:skipping:limit:)`, an
/// OFFSET over index entries). The search keeps, for every source, the stretch of ranks
/// `lo..<hi` where the wanted album can still be, and the key `low` below which every album is
/// known to come before it. Each round reads the middle album of every source's stretch (one
/// row each), takes the weighted median of those (weights: the stretches' lengths) as a pivot
/// and counts, in each other source, the albums between `low` and the pivot. The pivot's rank
/// then says on which side the wanted album lies, and every stretch is cut at the pivot: at
/// least a quarter of all candidates goes each round (the sources whose middle is on the
/// pivot's far side lose half their stretch, and they hold at least half the weight).
///
/// Cost for n sources and N candidates (at most offset + 1 per source): at most
/// log₄⁄₃(N) + 1 rounds of at most n one-row reads and n - 1 counts each; memory O(n) rows.
/// The rows read are the pivots' (about n per round), never the albums skipped. An offset
/// past the end costs n counts, each stopped at offset + 1, and reads no row.
struct OffsetSelection {
    let readers: [any AlbumStoreReader]
    /// Each reader's artist articles (`AlbumStoreReader.sortArticles()`).
    let articles: [SortArticles]
    let filter: AlbumFilter
    let sort: AlbumSort

    /// The key of the album just before `offset` in the merged order (the last album an
    /// offset page skips), or nil when no album is at `offset` (the page is empty). `offset` > 0.
    func key(before offset: Int) throws -> SortKey? {
        let n = readers.count
        // The wanted album has rank `wanted` (0-based) in the whole order: at most `wanted`
        // albums come before it, so in each source it is among the first `wanted + 1`.
        var wanted = offset - 1
        // Counted up to one past the offset: whether an album is there at all (else the page
        // is empty, and nothing else is read).
        let bound = offset == Int.max ? offset : offset + 1
        var lo = Array(repeating: 0, count: n)
        var hi: [Int] = []
        for reader in readers {
            hi.append(try reader.count(matching: filter, sort: sort, in: .all, limit: bound))
        }
        // A source with fewer albums than the bound has been counted whole: once `lo` reaches
        // its size, nothing of it is left after `low` to count.
        let sizes = hi.map { $0 < bound ? $0 : nil }
        func exhausted(_ source: Int) -> Bool { sizes[source].map { lo[source] >= $0 } ?? false }
        // No album at `offset` (no source reached the bound, so every count is the source's
        // whole, and their sum is small): past the end.
        guard hi.contains(where: { $0 >= bound }) || hi.reduce(0, +) > offset else { return nil }
        // Every album at or before `low` comes before the wanted one; `wanted` counts from it.
        var low: SortKey?
        while true {
            // The wanted album is among the first `wanted + 1` after `low` in every source.
            for source in 0..<n where hi[source] - lo[source] > wanted + 1 { hi[source] = lo[source] + wanted + 1 }
            var middles: [(key: MergeKey, album: Album, source: Int, rank: Int, weight: Int)] = []
            for source in 0..<n where hi[source] > lo[source] {
                let half = (hi[source] - lo[source]) / 2
                let rows = try readers[source].albums(
                    matching: filter, sort: sort, in: SortRange(after: low), skipping: half, limit: 1)
                guard let album = rows.first else {
                    // Fewer albums after `low` than the stretch claimed (cannot be in one
                    // snapshot; the counts decide): the stretch ends before its middle.
                    hi[source] = lo[source] + half
                    continue
                }
                middles.append((MergeKey(album, sort, articles[source]), album, source, half, hi[source] - lo[source]))
            }
            guard !middles.isEmpty else {
                if lo.indices.allSatisfy({ hi[$0] <= lo[$0] }) { return nil }
                continue
            }
            middles.sort { sort.descending ? $1.key.precedes($0.key) : $0.key.precedes($1.key) }
            let total = middles.reduce(0) { $0 + $1.weight }
            var reached = 0
            var pivotIndex = 0
            for (index, middle) in middles.enumerated() {
                reached += middle.weight
                if 2 * reached >= total {
                    pivotIndex = index
                    break
                }
            }
            let pivot = middles[pivotIndex]
            guard let pivotKey = SortKey.of(pivot.album, for: sort.field, articles: articles[pivot.source], search: sort.search) else {
                return nil
            }
            // The pivot's rank after `low`: the albums before it in each source.
            var beyond = Array(repeating: false, count: n)  // the source's middle comes after the pivot
            var halves = Array(repeating: 0, count: n)
            for middle in middles[(pivotIndex + 1)...] { beyond[middle.source] = true }
            for middle in middles { halves[middle.source] = middle.rank }
            var below = Array(repeating: 0, count: n)
            var rank = 0
            for source in 0..<n {
                if source == pivot.source {
                    below[source] = pivot.rank
                } else if exhausted(source) {
                    below[source] = 0
                } else if rank <= wanted {
                    below[source] = try readers[source].count(
                        matching: filter, sort: sort, in: SortRange(after: low, before: pivotKey), limit: wanted + 1)
                } else {
                    // Already past the wanted rank, so the pivot is too far whatever this source
                    // holds: not counted. A source whose middle comes after the pivot holds at
                    // most its middle's rank before it; any other keeps its stretch.
                    below[source] = beyond[source] ? halves[source] : hi[source] - lo[source]
                }
                rank += below[source]
            }
            if rank == wanted { return pivotKey }
            if rank < wanted {
                // The pivot and everything before it come before the wanted album.
                for source in 0..<n { lo[source] += below[source] }
                lo[pivot.source] += 1
                for source in 0..<n where hi[source] < lo[source] { hi[source] = lo[source] }
                wanted -= rank + 1
                low = pivotKey
            } else {
                // The wanted album comes before the pivot.
                for source in 0..<n { hi[source] = min(hi[source], lo[source] + below[source]) }
            }
        }
    }
}

/// An album's place in a value sort, computed once (the sort key's bytes or the number, then
/// the id bytes), so merging the sources' lists compares keys, not albums: the same order as
/// `AlbumSort.orders`.
private struct MergeKey {
    var text: [UInt8]
    var number: Int64
    var id: [UInt8]

    init(_ album: Album, _ sort: AlbumSort, _ articles: SortArticles) {
        switch SortValue.of(album, for: sort.field, articles: articles, search: sort.search) {
        case let .text(value)?: (text, number) = (Array(value.utf8), 0)
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
    let articles: SortArticles
    var from: SortAnchor
    var buffer: [Album] = []
    var position = 0
    var exhausted = false

    init(reader: any AlbumStoreReader, articles: SortArticles, from: SortAnchor) {
        self.reader = reader
        self.articles = articles
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
            if let end = rows.last, let value = SortValue.of(end, for: sort.field, articles: articles, search: sort.search) {
                from = .afterValue(value, end.id)
            }
        }
        return buffer[position]
    }

    /// Removes and returns the head (call after `head` returned one).
    mutating func take() -> Album {
        position += 1
        return buffer[position - 1]
    }
}
