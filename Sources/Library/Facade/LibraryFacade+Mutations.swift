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
            let (added, events) = try addAlbum(input, at: index, writer, finish: pushingUndo)
            let state = SavedState(
                client: client, currentAlbumIndex: added.index, albumID: added.album.id, updatedAt: added.album.createdAt)
            try writer.saveState(state)
            return (added, events + [
                .stateChanged(client: client, index: added.index, albumID: added.album.id, version: events[0].version),
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
        try mutating { writer in try updateAlbum(id: id, patch: patch, ifMatch: ifMatch, writer, finish: pushingUndo) }
    }

    /// Deletes the album with `id`; undo re-inserts it at the same index.
    ///
    /// - Parameter ifMatch: as in `update`, checked inside the transaction.
    /// - Returns: the deleted album and the index it had.
    /// - Throws: `.notFound`, `.preconditionFailed`.
    @discardableResult
    public func delete(id: AlbumID, ifMatch: ((Album) -> Bool)? = nil) throws(LibraryError) -> IndexedAlbum {
        try mutating { writer in try deleteAlbum(id: id, ifMatch: ifMatch, writer, finish: pushingUndo) }
    }

    /// Deletes the album at `index` (the tutorial's `deleteAlbumAtIndex:`, with the bounds check
    /// it lacked).
    ///
    /// - Returns: the deleted album and its index.
    /// - Throws: `.indexOutOfRange` unless `0 <= index < count`.
    @discardableResult
    public func delete(at index: Int) throws(LibraryError) -> IndexedAlbum {
        try mutating { writer in try deleteAlbum(at: index, writer, finish: pushingUndo) }
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
        try mutating { writer in try moveAlbum(id: id, to: to, writer, finish: pushingUndo) }
    }
}

/// The mutations' work inside a write transaction, shared by the single calls above and by
/// batches (`apply(_:atomic:)`). Each checks every rule **before** its first write (a refusal
/// throws with nothing changed), then changes the albums and calls `finish` once with its
/// inverse, which bumps the version and returns it: a single call pushes the inverse on the
/// undo stack at once (`finishMutation`), a batch collects them into one command.
extension LibraryFacade {
    typealias Finish = (any AlbumStoreWriter, UndoCommand) throws -> Int64

    /// The `finish` of a single call: bumps the version and pushes the inverse.
    var pushingUndo: Finish { { writer, undo in try self.finishMutation(writer, undo: undo) } }

    func addAlbum(_ input: AlbumInput, at index: Int?, _ writer: any AlbumStoreWriter, finish: Finish)
        throws -> (IndexedAlbum, [LibraryEvent])
    {
        let position = try InsertionIndex.resolve(requested: index, count: try writer.count())
        let album = Album(id: ids.next(), input: input, createdAt: now())
        try writer.insert(album, at: position)
        let version = try finish(writer, .remove(id: album.id, title: album.title))
        return (IndexedAlbum(album: album, index: position), [.albumAdded(id: album.id, index: position, version: version)])
    }

    func updateAlbum(id: AlbumID, patch: AlbumPatch, ifMatch: ((Album) -> Bool)?, _ writer: any AlbumStoreWriter,
                     finish: Finish) throws -> (IndexedAlbum, [LibraryEvent])
    {
        guard let current = try writer.album(id: id), let index = try writer.index(of: id) else {
            throw LibraryError.notFound(id)
        }
        if let ifMatch, !ifMatch(current) { throw LibraryError.preconditionFailed(id) }
        let input = try patch.applied(to: current.input)
        guard input != current.input else { return (IndexedAlbum(album: current, index: index), []) }
        var updated = Album(id: id, input: input, createdAt: current.createdAt)
        updated.updatedAt = now()
        try writer.update(updated)
        let version = try finish(writer, .restore(album: current))
        return (IndexedAlbum(album: updated, index: index), [.albumUpdated(id: id, index: index, version: version)])
    }

    func deleteAlbum(id: AlbumID, ifMatch: ((Album) -> Bool)?, _ writer: any AlbumStoreWriter, finish: Finish)
        throws -> (IndexedAlbum, [LibraryEvent])
    {
        guard let album = try writer.album(id: id), let index = try writer.index(of: id) else {
            throw LibraryError.notFound(id)
        }
        if let ifMatch, !ifMatch(album) { throw LibraryError.preconditionFailed(id) }
        return try removeAlbum(album, at: index, writer, finish: finish)
    }

    func deleteAlbum(at index: Int, ifMatch: ((Album) -> Bool)? = nil, _ writer: any AlbumStoreWriter, finish: Finish)
        throws -> (IndexedAlbum, [LibraryEvent])
    {
        let album = try Self.existingAlbum(at: index, in: writer)
        if let ifMatch, !ifMatch(album) { throw LibraryError.preconditionFailed(album.id) }
        return try removeAlbum(album, at: index, writer, finish: finish)
    }

    private func removeAlbum(_ album: Album, at index: Int, _ writer: any AlbumStoreWriter, finish: Finish)
        throws -> (IndexedAlbum, [LibraryEvent])
    {
        try writer.delete(id: album.id)
        let version = try finish(writer, .reinsert(album: album, index: index))
        return (IndexedAlbum(album: album, index: index), [.albumDeleted(id: album.id, index: index, version: version)])
    }

    func moveAlbum(id: AlbumID, to: Int, _ writer: any AlbumStoreWriter, finish: Finish) throws -> (IndexedAlbum, [LibraryEvent]) {
        guard let album = try writer.album(id: id), let from = try writer.index(of: id) else {
            throw LibraryError.notFound(id)
        }
        let count = try writer.count()
        guard to >= 0, to < count else { throw LibraryError.indexOutOfRange(index: to, count: count) }
        guard from != to else { return (IndexedAlbum(album: album, index: to), []) }
        try writer.move(id: id, to: to)
        let version = try finish(writer, .move(id: id, title: album.title, index: from))
        return (IndexedAlbum(album: album, index: to), [.albumMoved(id: id, from: from, to: to, version: version)])
    }
}
