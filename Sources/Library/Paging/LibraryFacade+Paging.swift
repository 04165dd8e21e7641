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
        return try reading { reader in
            try pager(query, over: reader).page(start: request.start, limit: request.limit, includeTotal: request.includeTotal)
        }
    }

    /// The pager of `query` (its filter validated) over this library alone, as `reader` sees it.
    func pager(_ query: AlbumQuery, over reader: any AlbumStoreReader) -> CompositePager {
        CompositePager(
            readers: [reader], libraries: [library], query: query, filter: CombinedFilter(query.filter),
            scope: PageCursor.scope(library: library), revision: nil, labels: false, counts: counts)
    }
}
