extension LibraryFacade {
    /// The album with `id` and its current index.
    ///
    /// - Throws: `LibraryError.notFound`.
    public func album(id: AlbumID) throws(LibraryError) -> IndexedAlbum {
        try versionedAlbum(id: id).album
    }

    /// ``album(id:)`` with the library version its read saw (one snapshot): the version a
    /// cache keyed by version must keep it under (a read after the version was looked up may
    /// see a newer one).
    public func versionedAlbum(id: AlbumID) throws(LibraryError) -> (album: IndexedAlbum, version: Int64) {
        try reading { reader in
            guard let album = try reader.album(id: id), let index = try reader.index(of: id) else {
                throw LibraryError.notFound(id)
            }
            return (IndexedAlbum(album: album, index: index), try reader.version())
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
