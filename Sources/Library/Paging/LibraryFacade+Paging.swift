extension LibraryFacade {
    /// One page of a list query, read in one snapshot (PRODUCT.md, "The request model").
    ///
    /// A library's list is the one-source case of `CompositePager`, which states the rules:
    /// in position order a cursor walk is exact under adds, deletes and moves (within the
    /// library and between libraries), and a walk whose changes are no longer in the change
    /// feed expires (`.walkExpired`); value sorts are keyset walks by (value, id). Items carry
    /// their library index only in the unfiltered ascending position order.
    ///
    /// - Throws: `.invalid` for a bad limit, offset or filter, `.invalidCursor` for a cursor of
    ///   another query or list, `.walkExpired`, `.storage` when the store fails.
    public func page(_ request: PageRequest) throws(LibraryError) -> AlbumListPage {
        try request.checked()
        let query = AlbumQuery(sort: request.query.sort, filter: try request.query.filter.validated())
        let scope = PageCursor.scope(library: library)
        let library = library
        let counts = counts
        return try reading { reader in
            let pager = CompositePager(
                readers: [reader], libraries: [library], query: query, filter: CombinedFilter(query.filter), scope: scope,
                revision: nil, labels: false, counts: counts)
            return try pager.page(start: request.start, limit: request.limit, includeTotal: request.includeTotal)
        }
    }
}
