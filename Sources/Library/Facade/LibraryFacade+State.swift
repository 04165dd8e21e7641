extension LibraryFacade {
    /// `client`'s current-album state, resolved against the library as it is now (see
    /// `SavedState.resolved`: follows the saved album, else clamps the index; an empty library
    /// gives index 0 and no album). A client that never saved a state gets index 0 with
    /// `updatedAt` nil.
    ///
    /// - Throws: `.invalid` for a bad client name.
    public func state(client: String = ClientName.default) throws(LibraryError) -> SavedState {
        try ClientName.validate(client)
        return try reading { reader in
            let stored = try reader.state(client: client)
                ?? SavedState(client: client, currentAlbumIndex: 0, albumID: nil, updatedAt: nil)
            return try stored.resolved(
                count: try reader.count(), indexOfAlbum: { try reader.index(of: $0) }, albumAt: { try reader.album(at: $0) })
        }
    }

    /// Saves `client`'s current album by index.
    ///
    /// Rule: `index` must be a current position (`0..<count`); on an empty library the only
    /// valid state is index 0 (no album). Saving a state does not bump the library version:
    /// the album list did not change, so cached pages stay current.
    ///
    /// - Throws: `.indexOutOfRange`, `.invalid` for a bad client name.
    @discardableResult
    public func setState(client: String = ClientName.default, index: Int) throws(LibraryError) -> SavedState {
        try ClientName.validate(client)
        return try mutating { writer in
            let count = try writer.count()
            let albumID: AlbumID?
            if count == 0 && index == 0 {
                albumID = nil
            } else {
                albumID = try Self.existingAlbum(at: index, in: writer).id
            }
            return try save(SavedState(client: client, currentAlbumIndex: index, albumID: albumID, updatedAt: now()), writer)
        }
    }

    /// Saves `client`'s current album by id.
    ///
    /// - Throws: `.notFound`, `.invalid` for a bad client name.
    @discardableResult
    public func setState(client: String = ClientName.default, albumID: AlbumID) throws(LibraryError) -> SavedState {
        try ClientName.validate(client)
        return try mutating { writer in
            guard let index = try writer.index(of: albumID) else { throw LibraryError.notFound(albumID) }
            return try save(SavedState(client: client, currentAlbumIndex: index, albumID: albumID, updatedAt: now()), writer)
        }
    }

    private func save(_ state: SavedState, _ writer: any AlbumStoreWriter) throws -> (SavedState, [LibraryEvent]) {
        try writer.saveState(state)
        let event = LibraryEvent.stateChanged(
            client: state.client, index: state.currentAlbumIndex, albumID: state.albumID, version: try writer.version())
        return (state, [event])
    }
}
