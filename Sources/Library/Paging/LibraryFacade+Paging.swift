extension LibraryFacade {
    /// One page of a list query, read in one snapshot (PRODUCT.md, "The request model").
    ///
    /// Rules:
    /// - Cursor pages are keyset pages: inserts and deletes elsewhere never make an album that
    ///   exists throughout appear twice or not at all. (An album that is *moved* or edited
    ///   across the cursor may, as with any keyset.)
    /// - In the library's own order a page continues after the last album of the previous
    ///   page that still exists (see `PageCursor`); only if all of its trailing albums were
    ///   deleted does it fall back to the index where that page ended.
    /// - Items carry their library index only in the unfiltered position order.
    ///
    /// - Throws: `.invalid` for a bad limit or filter, `.invalidCursor` for a cursor of another
    ///   query, `.storage` when the store fails.
    public func page(_ request: PageRequest) throws(LibraryError) -> AlbumListPage {
        guard PageRequest.limitRange.contains(request.limit) else {
            throw .invalid(ValidationFailure([FieldError(
                field: "limit",
                message: "limit must be between \(PageRequest.limitRange.lowerBound) and \(PageRequest.limitRange.upperBound) (got \(request.limit))")]))
        }
        if case let .offset(offset) = request.start, offset < 0 {
            throw .invalid(ValidationFailure([FieldError(field: "offset", message: "offset must be 0 or more (got \(offset))")]))
        }
        let query = AlbumQuery(sort: request.query.sort, filter: try request.query.filter.validated())
        let limit = request.limit
        return try reading { reader in
            let version = try reader.version()
            let fetch = { (anchor: SortAnchor) throws -> [Album]? in
                try reader.albums(matching: query.filter, sort: query.sort, from: anchor, limit: limit + 1)
            }
            var rows: [Album] = []
            var firstIndex: Int?
            switch request.start {
            case .first:
                rows = try fetch(.start) ?? []
                firstIndex = 0
            case let .offset(offset):
                rows = try fetch(.offset(offset)) ?? []
                firstIndex = offset
            case let .cursor(cursor) where query.sort.field == .position:
                var found = false
                for anchor in cursor.anchors.reversed() {
                    guard let after = try fetch(.afterAlbum(anchor)) else { continue }
                    rows = after
                    if query.showsIndexes, let index = try reader.index(of: anchor) { firstIndex = index + 1 }
                    found = true
                    break
                }
                if !found {
                    // Every trailing album of the previous page is gone: continue where that
                    // page ended, less the albums that were deleted from it (written so that
                    // no end index, however large or small, can overflow).
                    let end = cursor.endIndex ?? 0
                    let offset = end > cursor.anchors.count ? end - cursor.anchors.count : 0
                    rows = try fetch(.offset(offset)) ?? []
                    firstIndex = offset
                }
            case let .cursor(cursor):
                guard let value = cursor.lastValue, let id = cursor.anchors.last else {
                    throw LibraryError.invalidCursor("the cursor does not fit this sort; start again without a cursor")
                }
                rows = try fetch(.afterValue(value, id)) ?? []
            }
            let hasMore = rows.count > limit
            if hasMore { rows.removeLast(rows.count - limit) }
            let items = rows.enumerated().map { offset, album in
                ListedAlbum(album: album, index: query.showsIndexes ? firstIndex.map { $0 + offset } : nil)
            }
            var next: PageCursor?
            if hasMore, let last = rows.last {
                let anchors = query.sort.field == .position ? rows.suffix(PageCursor.anchorCount).map(\.id) : [last.id]
                next = PageCursor(
                    fingerprint: query.fingerprint, lastValue: SortValue.of(last, for: query.sort.field),
                    anchors: anchors, endIndex: query.showsIndexes ? firstIndex.map { $0 + rows.count } : nil)
            }
            let total = request.includeTotal ? try reader.count(matching: query.filter) : nil
            return AlbumListPage(items: items, next: next, version: version, total: total)
        }
    }
}
