import BlueLibraryAPI

/// One page of a list made of one or more sources (a library is the one-source case, a view
/// the several-source case), read from readers of one snapshot: the single code path behind
/// `LibraryFacade.page` and `Libraries.page(view:_:)`.
///
/// Rules:
/// - **Position order** is the sources' orders concatenated in the given order (descending:
///   the whole concatenation reversed). A cursor walk is exact (see `WalkReplay`): every album
///   that is in the list throughout the walk is shown exactly once, whatever is added, deleted
///   or moved meanwhile, within or between sources. An album added during the walk is shown
///   iff it lands ahead of the walk's boundary; a deleted one may have been shown before its
///   deletion. Albums that crossed the boundary the other way (not shown, now behind) come
///   first on the next page, so that page is not in list order. If the change feed no longer
///   holds every change since the cursor's versions, a source was replaced, the view's
///   definition changed, or more than `WalkMark.maxExceptions` albums are on the wrong side,
///   the walk expires (`.walkExpired`: start again).
/// - **Value sorts** are keyset walks by (value, id) over every source merged; ids are unique
///   across libraries, so the order is total. Exact under adds, deletes and moves; an edit
///   that changes the sorted field may carry an album across the cursor.
/// - Items carry their index (in a view: the view index) only in unfiltered ascending
///   position order, and their library when `labels` is set (views).
/// - Cost: one read transaction per page. A first page is bounded reads from the start of
///   the first sources; a cursor page reads the changes since the cursor (at most
///   ``maxReplayedChanges``, else the walk expires) and a keyset read after the album just
///   before its boundary (by id; by index only when that album was itself moved or deleted),
///   plus the place of each exception — never a scan. A value-sorted view page reads each
///   source in batches as the merge needs them. A value-sorted offset over several sources
///   is found by rank selection in the sources' sort indexes (`OffsetSelection`: counts and
///   one-row reads, O(sources × log n) of them), never by merging what it skips; memory is
///   O(sources + limit) rows whatever the offset. Other offset pages may walk (a store's
///   OFFSET, or a position offset with a filter). A filter the store cannot apply whole
///   (`CombinedFilter.remainder`) reads past the rows it drops (an offset then merges from
///   the start, dropping what it skips as it goes, in bounded batches).
struct CompositePager {
    let readers: [any AlbumStoreReader]
    let libraries: [LibraryID]
    let query: AlbumQuery
    let filter: CombinedFilter
    let scope: String
    let revision: Int64?
    let labels: Bool
    /// Where the number of albums `filter` matches in a source at its version is kept
    /// (`count=true` and filtered offsets ask for it; see `FilterCounts`).
    let counts: FilterCounts

    /// A cursor page replays at most this many changes (over all sources).
    static let maxReplayedChanges: Int64 = 10_000

    func page(start: PageStart, limit: Int, includeTotal: Bool) throws -> AlbumListPage {
        guard !readers.isEmpty else {
            // A view whose every source was deleted (with force) lists nothing.
            return AlbumListPage(items: [], next: nil, version: 0, versions: [], total: includeTotal ? 0 : nil)
        }
        let versions = try readers.map { try $0.version() }
        if case let .cursor(cursor) = start {
            guard cursor.scope == scope else {
                throw LibraryError.invalidCursor(
                    "the cursor belongs to another list (\(cursor.scope), not \(scope)); start again without a cursor")
            }
            guard cursor.revision == revision else {
                throw LibraryError.walkExpired("the view's definition changed since this walk began; start again")
            }
        }
        let (items, next) = query.sort.field == .position
            ? try positionPage(start: start, limit: limit, versions: versions)
            : try valuePage(start: start, limit: limit)
        let total = includeTotal ? try (0..<readers.count).reduce(0) { $0 + (try matching(source: $1, versions: versions)) } : nil
        return AlbumListPage(items: items, next: next, version: versions[0], versions: versions, total: total)
    }

    /// The number of albums of source `source` that `filter` matches, at the version this
    /// snapshot read (`versions[source]`): computed once per version and filter.
    private func matching(source: Int, versions: [Int64]) throws -> Int {
        try counts.count(library: libraries[source], version: versions[source], filter: filter) {
            try filter.count(in: readers[source])
        }
    }

    // MARK: - Position order

    private struct Placed {
        var exception: WalkException
        var album: Album
        var walkIndex: Int
    }

    private func positionPage(start: PageStart, limit: Int, versions: [Int64]) throws -> ([ListedAlbum], PageCursor?) {
        let n = readers.count
        let reversed = query.sort.descending
        func actual(_ walkSource: Int) -> Int { reversed ? n - 1 - walkSource : walkSource }
        let counts = SourceCounts(readers)
        func walkIndex(_ index: Int, source: Int) throws -> Int { reversed ? try counts[source] - 1 - index : index }

        var k = 0, b = 0
        var exceptions: [WalkException] = []
        /// The album just before the boundary in source k, when known (see `WalkMark.anchor`).
        var boundaryAnchor: AlbumID?
        var offsetStart: (source: Int, skip: Int)?
        switch start {
        case .first:
            break
        case let .offset(offset) where filter.isEmpty:
            let walkCounts = try (0..<n).map { try counts[actual($0)] }
            let walkLayout = CompositeIndex(counts: walkCounts)
            if let (source, local) = walkLayout.decompose(offset) {
                (k, b) = (source, local)
            } else {
                (k, b) = (n - 1, walkCounts[n - 1])
            }
        case let .offset(offset):
            var remaining = offset
            var found: (Int, Int)?
            for walkSource in 0..<n {
                let matches = try matching(source: actual(walkSource), versions: versions)
                if remaining < matches {
                    found = (walkSource, remaining)
                    break
                }
                remaining -= matches
            }
            guard let found else { return ([], nil) }
            offsetStart = found
            k = found.0
        case let .cursor(cursor):
            guard let mark = cursor.mark, mark.versions.count == n else {
                throw LibraryError.invalidCursor("the cursor does not fit this list; start again without a cursor")
            }
            var replay = WalkReplay(mark)
            var replayed: Int64 = 0
            for walkSource in 0..<n {
                let source = actual(walkSource)
                let (before, now) = (mark.versions[source], versions[source])
                guard before <= now else {
                    throw LibraryError.walkExpired("the cursor is from a later version of \(libraries[source]) than this one; start again")
                }
                guard before < now else { continue }
                replayed += now - before
                guard replayed <= Self.maxReplayedChanges else {
                    throw LibraryError.walkExpired(
                        "more than \(Self.maxReplayedChanges) changes were made since the last page; start again")
                }
                let changes = try readers[source].changes(after: before, limit: Int(now - before) + 1)
                guard changes.count == Int(now - before), changes.first?.version == before + 1, changes.last?.version == now else {
                    throw LibraryError.walkExpired(
                        "the change feed of \(libraries[source]) no longer holds every change since this walk's last page; start again")
                }
                try replay.replay(walkSource: walkSource, changes: changes, countNow: try counts[source], reversed: reversed)
            }
            k = replay.source
            b = min(replay.boundary, try counts[actual(k)])
            boundaryAnchor = b == replay.boundary && b > 0 ? replay.anchor : nil
            exceptions = try replay.exceptionsNow()
        }

        // Where each unseen exception is now, to show it (the store knows its index; the replay
        // only its side). Seen ones are only skipped when met: their index is read only if the
        // walk stops in their source (below).
        var placed: [Placed] = []
        for exception in exceptions where !exception.seen {
            let reader = readers[actual(exception.source)]
            guard let album = try reader.album(id: exception.id), let index = try reader.index(of: exception.id) else { continue }
            placed.append(Placed(exception: exception, album: album, walkIndex: try walkIndex(index, source: actual(exception.source))))
        }
        let seenAhead = Set(exceptions.filter(\.seen).map(\.id))

        func listed(_ album: Album, source: Int, walkIndex: Int?) throws -> ListedAlbum {
            var index: Int?
            if query.showsIndexes && filter.isEmpty, let walkIndex { index = try counts.offset(of: source) + walkIndex }
            return ListedAlbum(album: album, index: index, library: labels ? libraries[source] : nil)
        }

        // First the albums that came to be behind the walk without being shown.
        var items: [ListedAlbum] = []
        var settled: Set<AlbumID> = []
        for unseen in placed.filter({ !$0.exception.seen }).sorted(by: { ($0.exception.source, $0.walkIndex) < ($1.exception.source, $1.walkIndex) }) {
            guard items.count < limit else { break }
            settled.insert(unseen.exception.id)
            if filter.matches(unseen.album) {
                items.append(try listed(unseen.album, source: actual(unseen.exception.source), walkIndex: unseen.walkIndex))
            }
        }

        // Then on from the boundary, skipping albums already seen.
        let contiguous = filter.isEmpty
        let order = AlbumSort(.position, descending: reversed)
        var last: (walkSource: Int, id: AlbumID, walkIndex: Int?)?
        var more = false
        var walkSource = k
        var position = b
        scan: while walkSource < n {
            let source = actual(walkSource)
            let reader = readers[source]
            var skip = 0
            var anchor: SortAnchor
            if let offsetStart, offsetStart.source == walkSource {
                if filter.remainder == nil {
                    anchor = offsetStart.skip == 0 ? .start : .offset(offsetStart.skip)
                } else {
                    (anchor, skip) = (.start, offsetStart.skip)
                }
            } else if position == 0 {
                anchor = .start
            } else if position >= (try counts[source]) {
                (walkSource, position) = (walkSource + 1, 0)
                continue
            } else if let known = boundaryAnchor {
                anchor = .afterAlbum(known)
            } else if let before = try reader.album(at: reversed ? try counts[source] - position : position - 1) {
                boundaryAnchor = before.id
                anchor = .afterAlbum(before.id)
            } else {
                (walkSource, position) = (walkSource + 1, 0)
                continue
            }
            var next = position
            while true {
                let wanted = max(1, limit - items.count + 1 + seenAhead.count + skip)
                var fetched = try reader.albums(matching: filter.store, sort: order, from: anchor, limit: wanted)
                if fetched == nil, next == position, position > 0,
                    let before = try reader.album(at: reversed ? try counts[source] - position : position - 1)
                {
                    // The anchor is gone (it cannot be, by the replay's rules; the index decides).
                    boundaryAnchor = before.id
                    anchor = .afterAlbum(before.id)
                    fetched = try reader.albums(matching: filter.store, sort: order, from: anchor, limit: wanted)
                }
                let rows = fetched ?? []
                for row in rows {
                    let index = next
                    next += 1
                    if seenAhead.contains(row.id) || !filter.remainderMatches(row) { continue }
                    if skip > 0 {
                        skip -= 1
                        continue
                    }
                    if items.count == limit {
                        more = true
                        break scan
                    }
                    items.append(try listed(row, source: source, walkIndex: contiguous ? index : nil))
                    last = (walkSource, row.id, contiguous ? index : nil)
                }
                guard rows.count == wanted, let end = rows.last else { break }
                anchor = .afterAlbum(end.id)
            }
            (walkSource, position) = (walkSource + 1, 0)
        }

        // The new boundary: right after the last album shown from the scan.
        var newK = k, newB = b
        if let last {
            newK = last.walkSource
            if let index = last.walkIndex {
                newB = index + 1
            } else if let index = try readers[actual(last.walkSource)].index(of: last.id) {
                newB = try walkIndex(index, source: actual(last.walkSource)) + 1
            }
        }
        // Unseen exceptions not shown yet stay; seen ones stay while still ahead of the walk.
        var remaining = placed.map(\.exception).filter { !settled.contains($0.id) }
        for exception in exceptions where exception.seen {
            if exception.source > newK {
                remaining.append(exception)
            } else if exception.source == newK, let index = try readers[actual(newK)].index(of: exception.id),
                try walkIndex(index, source: actual(newK)) >= newB
            {
                remaining.append(exception)
            }
        }
        let leftOver = remaining.contains { !$0.seen }
        guard more || leftOver else { return (items, nil) }
        let anchor = last?.id ?? (newK == k && newB == b ? boundaryAnchor : nil)
        let mark = WalkMark(versions: versions, source: newK, boundary: newB, exceptions: remaining, anchor: newB > 0 ? anchor : nil)
        return (items, PageCursor(fingerprint: query.fingerprint, scope: scope, revision: revision, mark: mark))
    }
}

extension PageRequest {
    /// Checks the limit and offset every list accepts.
    /// - Throws: `.invalid` naming `limit` or `offset`.
    func checked() throws(LibraryError) {
        guard PageRequest.limitRange.contains(limit) else {
            throw .invalid(ValidationFailure([FieldError(
                field: "limit",
                message: "limit must be between \(PageRequest.limitRange.lowerBound) and \(PageRequest.limitRange.upperBound) (got \(limit))")]))
        }
        if case let .offset(offset) = start, offset < 0 {
            throw .invalid(ValidationFailure([FieldError(field: "offset", message: "offset must be 0 or more (got \(offset))")]))
        }
    }
}

/// The album counts of a page's sources, each read when first needed (a first page in
/// ascending order reads none but what it pages through).
private final class SourceCounts {
    private let readers: [any AlbumStoreReader]
    private var known: [Int?]

    init(_ readers: [any AlbumStoreReader]) {
        self.readers = readers
        known = Array(repeating: nil, count: readers.count)
    }

    subscript(source: Int) -> Int {
        get throws {
            if let count = known[source] { return count }
            let count = try readers[source].count()
            known[source] = count
            return count
        }
    }

    /// The view index of the first album of `source`.
    func offset(of source: Int) throws -> Int {
        var sum = 0
        for earlier in 0..<source { sum += try self[earlier] }
        return sum
    }
}
