extension Libraries {
    /// Moves the album with `id` from library `from` to library `to`
    /// (`POST /libraries/{from}/albums/{id}/move` with `{"library": to, "index": index}`).
    ///
    /// Rules:
    /// - One transaction over both libraries: the album leaves `from` (later albums shift down)
    ///   and arrives in `to` at `index`, keeping its id, fields and timestamps; each library's
    ///   version is bumped exactly once. Nothing else changes (saved states stay as they are).
    /// - `index` as for add: nil or past the end appends; negative is `.indexOutOfRange`.
    /// - The undo command goes on the **source** library's stack (`moveBack`): undo there moves
    ///   the album back to the index it had. The target's stack is not touched.
    /// - Both change feeds get an entry: `from` a `.deleted` with `peer` = `to`, `to` an
    ///   `.added` with `peer` = `from`; the events are `albumMovedOut` on `from`'s sink, then
    ///   `albumMovedIn` on `to`'s (published after the commit, never on failure).
    /// - `from == to` is today's move within a library (`LibraryFacade.move(id:to:)`, whose
    ///   index must be a current position; nil means the last one).
    ///
    /// - Returns: the album and its index in `to`.
    /// - Throws: `.libraryNotFound` (either library), `.notFound` when `from` has no such
    ///   album, `.indexOutOfRange`, `.storage`.
    public func move(_ id: AlbumID, from: LibraryID, to: LibraryID, index: Int?) throws(LibraryError) -> IndexedAlbum {
        let source = try facade(from)
        guard from != to else {
            let position: Int
            if let index { position = index } else { position = try lastIndex(of: id, in: source) }
            return try source.move(id: id, to: position)
        }
        let target = try facade(to)
        return try LibraryFacade.mutating(leaving: source, arriving: target) { sourceWriter, targetWriter in
            let (moved, leaving, arriving) = try LibraryFacade.transfer(
                id, from: (source, sourceWriter), to: (target, targetWriter),
                at: { count in try InsertionIndex.resolve(requested: index, count: count) },
                finishSource: { writer, album, fromIndex in
                    try source.finishMutation(writer, undo: .moveBack(id: id, title: album.title, library: to, index: fromIndex))
                })
            return (moved, [leaving], [arriving])
        }
    }

    /// The last position of `facade`'s library, checking that the album is there first (so a
    /// missing album is `.notFound`, as for an explicit index).
    private func lastIndex(of id: AlbumID, in facade: LibraryFacade) throws(LibraryError) -> Int {
        _ = try facade.album(id: id)
        return try facade.count() - 1
    }
}
