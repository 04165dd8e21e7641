import BlueLibraryAPI

extension LibraryFacade {
    /// Adds an album (the tutorial's `addAlbum:atIndex:`) and makes it `client`'s current album.
    ///
    /// - Parameters:
    ///   - index: where to insert; see `InsertionIndex.resolve` (nil or past the end appends).
    ///   - client: whose saved state moves to the new album, as the tutorial's view controller
    ///     selected the album it had just added.
    /// - Returns: the new album and the index it ended up at.
    /// - Throws: `LibraryError.indexOutOfRange` for a negative index; `.invalid` for a bad
    ///   client name.
    public func add(_ input: AlbumInput, at index: Int? = nil, client: String = ClientName.default)
        throws(LibraryError) -> IndexedAlbum
    {
        try ClientName.validate(client)
        return try mutating { writer in
            let position = try InsertionIndex.resolve(requested: index, count: try writer.count())
            let createdAt = now()
            let album = Album(id: ids.next(), input: input, createdAt: createdAt)
            try writer.insert(album, at: position)
            let version = try finishMutation(writer, undo: .remove(id: album.id, title: album.title))
            let state = SavedState(client: client, currentAlbumIndex: position, albumID: album.id, updatedAt: createdAt)
            try writer.saveState(state)
            return (IndexedAlbum(album: album, index: position), [
                .albumAdded(id: album.id, index: position, version: version),
                .stateChanged(client: client, index: position, albumID: album.id, version: version),
            ])
        }
    }

    /// Applies a merge patch to the album with `id`.
    ///
    /// - Parameter ifMatch: evaluated on the album's current value **inside** the write
    ///   transaction, so no other write can slip in between the check and the change (the
    ///   server passes an ETag comparison for `If-Match`).
    /// - Returns: the album after the patch; an unchanged album when the patch changes nothing
    ///   (then nothing is committed).
    /// - Throws: `.notFound`; `.preconditionFailed` when `ifMatch` returns false (checked
    ///   before the patch is validated); `.invalid` when the patched album breaks a rule.
    public func update(id: AlbumID, patch: AlbumPatch, ifMatch: ((Album) -> Bool)? = nil)
        throws(LibraryError) -> IndexedAlbum
    {
        try mutating { writer in
            guard let current = try writer.album(id: id), let index = try writer.index(of: id) else {
                throw LibraryError.notFound(id)
            }
            if let ifMatch, !ifMatch(current) { throw LibraryError.preconditionFailed(id) }
            let input = try patch.applied(to: current.input)
            guard input != current.input else { return (IndexedAlbum(album: current, index: index), []) }
            var updated = Album(id: id, input: input, createdAt: current.createdAt)
            updated.updatedAt = now()
            try writer.update(updated)
            let version = try finishMutation(writer, undo: .restore(album: current))
            return (IndexedAlbum(album: updated, index: index), [.albumUpdated(id: id, index: index, version: version)])
        }
    }

    /// Deletes the album with `id`; undo re-inserts it at the same index.
    ///
    /// - Parameter ifMatch: as in `update`, checked inside the transaction.
    /// - Returns: the deleted album and the index it had.
    /// - Throws: `.notFound`, `.preconditionFailed`.
    @discardableResult
    public func delete(id: AlbumID, ifMatch: ((Album) -> Bool)? = nil) throws(LibraryError) -> IndexedAlbum {
        try mutating { writer in
            guard let album = try writer.album(id: id), let index = try writer.index(of: id) else {
                throw LibraryError.notFound(id)
            }
            if let ifMatch, !ifMatch(album) { throw LibraryError.preconditionFailed(id) }
            return try deleteAlbum(album, at: index, writer)
        }
    }

    /// Deletes the album at `index` (the tutorial's `deleteAlbumAtIndex:`, with the bounds check
    /// it lacked).
    ///
    /// - Returns: the deleted album and its index.
    /// - Throws: `.indexOutOfRange` unless `0 <= index < count`.
    @discardableResult
    public func delete(at index: Int) throws(LibraryError) -> IndexedAlbum {
        try mutating { writer in
            let album = try Self.existingAlbum(at: index, in: writer)
            return try deleteAlbum(album, at: index, writer)
        }
    }

    private func deleteAlbum(_ album: Album, at index: Int, _ writer: any AlbumStoreWriter)
        throws -> (IndexedAlbum, [LibraryEvent])
    {
        try writer.delete(id: album.id)
        let version = try finishMutation(writer, undo: .reinsert(album: album, index: index))
        return (IndexedAlbum(album: album, index: index), [.albumDeleted(id: album.id, index: index, version: version)])
    }

    /// Moves the album with `id` so that it ends up at index `to`.
    ///
    /// Rule: `to` must be a current position (`0..<count`); unlike add, an index past the end
    /// is an error, not clamped — a move is a precise request, and silently moving somewhere
    /// else would hide the client's mistake. Moving to the current index commits nothing.
    ///
    /// - Returns: the album at its new index.
    /// - Throws: `.notFound`, `.indexOutOfRange`.
    public func move(id: AlbumID, to: Int) throws(LibraryError) -> IndexedAlbum {
        try mutating { writer in
            guard let album = try writer.album(id: id), let from = try writer.index(of: id) else {
                throw LibraryError.notFound(id)
            }
            let count = try writer.count()
            guard to >= 0, to < count else { throw LibraryError.indexOutOfRange(index: to, count: count) }
            guard from != to else { return (IndexedAlbum(album: album, index: to), []) }
            try writer.move(id: id, to: to)
            let version = try finishMutation(writer, undo: .move(id: id, title: album.title, index: from))
            return (IndexedAlbum(album: album, index: to), [.albumMoved(id: id, from: from, to: to, version: version)])
        }
    }
}
