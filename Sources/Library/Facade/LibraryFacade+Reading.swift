extension LibraryFacade {
    /// A page of albums in library order.
    ///
    /// - Parameters:
    ///   - offset: the index of the first album, 0 or more (past the end gives no items).
    ///   - limit: at most this many albums, 1…500.
    /// - Throws: `LibraryError.invalid` naming `offset`/`limit` when out of range.
    public func list(offset: Int = 0, limit: Int = AlbumPage.defaultLimit) throws(LibraryError) -> AlbumPage {
        var errors: [FieldError] = []
        if offset < 0 {
            errors.append(FieldError(field: "offset", message: "offset must be 0 or more (got \(offset))"))
        }
        if !AlbumPage.limitRange.contains(limit) {
            errors.append(FieldError(
                field: "limit",
                message: "limit must be between \(AlbumPage.limitRange.lowerBound) and \(AlbumPage.limitRange.upperBound) (got \(limit))"))
        }
        guard errors.isEmpty else { throw .invalid(ValidationFailure(errors)) }
        return try reading { reader in
            let albums = try reader.albums(offset: offset, limit: limit)
            return AlbumPage(
                items: albums.enumerated().map { IndexedAlbum(album: $1, index: offset + $0) },
                offset: offset, limit: limit, total: try reader.count(), version: try reader.version())
        }
    }

    /// The album with `id` and its current index.
    ///
    /// - Throws: `LibraryError.notFound`.
    public func album(id: AlbumID) throws(LibraryError) -> IndexedAlbum {
        try reading { reader in
            guard let album = try reader.album(id: id), let index = try reader.index(of: id) else {
                throw LibraryError.notFound(id)
            }
            return IndexedAlbum(album: album, index: index)
        }
    }

    /// The album at `index`.
    ///
    /// - Throws: `LibraryError.indexOutOfRange` unless `0 <= index < count`.
    public func album(at index: Int) throws(LibraryError) -> IndexedAlbum {
        try reading { reader in
            let album = try Self.existingAlbum(at: index, in: reader)
            return IndexedAlbum(album: album, index: index)
        }
    }

    /// The album at `index`, checking the range before asking the store.
    static func existingAlbum(at index: Int, in reader: any AlbumStoreReader) throws -> Album {
        let count = try reader.count()
        guard index >= 0, index < count, let album = try reader.album(at: index) else {
            throw LibraryError.indexOutOfRange(index: index, count: count)
        }
        return album
    }
}
