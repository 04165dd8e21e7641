/// Whole-list walks: every album a list query matches, in its order, a page at a time, for
/// exports that must not hold the list in memory (`GET /albums` as CSV).
///
/// Rules:
/// - One read snapshot from the first album to the last: the walk never sees a change made
///   meanwhile, so nothing is listed twice or skipped however the list changes.
/// - Memory is one page (`pageSize` albums, at most `PageRequest.limitRange`'s upper bound),
///   whatever the list's length: the walk is the list's own cursor pages, read one after the
///   other in that snapshot.
/// - `body` gets each page's items in order (an item's `index` as a page would carry it: set
///   only in the unfiltered ascending position order). An error it throws ends the walk and is
///   rethrown as the facade's errors are (`LibraryError.storage` wrapping it).
extension LibraryFacade {
    /// Walks the library's albums that `query` lists; returns the version it read.
    /// - Throws: `.invalid` for a bad filter, `.storage` when the store (or `body`) fails.
    public func walkList(
        _ query: AlbumQuery, pageSize: Int = PageRequest.limitRange.upperBound, _ body: ([ListedAlbum]) throws -> Void
    ) throws(LibraryError) -> Int64 {
        let query = AlbumQuery(sort: query.sort, filter: try query.filter.validated())
        return try reading { reader in try ListWalk.run(pager(query, over: reader), pageSize: pageSize, body).version }
    }
}

extension Libraries {
    /// Walks the albums of view `id` that `query` lists (the view's own filter and the
    /// query's), in one snapshot of its sources; returns the sources' versions it read.
    /// - Throws: `.viewNotFound`, `.invalid` for a bad filter, `.storage`.
    public func walkList(
        view id: ViewID, _ query: AlbumQuery, pageSize: Int = PageRequest.limitRange.upperBound,
        _ body: ([ListedAlbum]) throws -> Void
    ) throws(LibraryError) -> [Int64] {
        let view = try self.view(id)
        let query = AlbumQuery(sort: query.sort, filter: try query.filter.validated())
        let counts = counts
        do {
            return try store.read(view.sources) { readers in
                let pager = CompositePager(
                    readers: readers, libraries: view.sources, query: query, filter: CombinedFilter(query.filter, view: view.filter),
                    scope: PageCursor.scope(view: id), revision: view.revision, labels: true, counts: counts)
                return try ListWalk.run(pager, pageSize: pageSize, body).versions
            }
        } catch {
            throw LibraryFacade.libraryError(from: error)
        }
    }
}

/// The loop both walks share.
enum ListWalk {
    static func run(_ pager: CompositePager, pageSize: Int, _ body: ([ListedAlbum]) throws -> Void) throws -> AlbumListPage {
        let limit = min(max(pageSize, PageRequest.limitRange.lowerBound), PageRequest.limitRange.upperBound)
        var start = PageStart.first
        while true {
            let page = try pager.page(start: start, limit: limit, includeTotal: false)
            try body(page.items)
            guard let next = page.next else { return page }
            start = .cursor(next)
        }
    }
}

