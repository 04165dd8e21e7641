extension LibraryFacade {
    /// Runs `body` in one write transaction over the libraries of `leaving` and `arriving` (a
    /// move between libraries, or its undo), then lets each facade take note of the commit.
    ///
    /// Rules, as for a one-library `mutating`: `body` returns each library's events; the
    /// change feed entries of both are derived from them and recorded inside the transaction;
    /// after the commit each facade updates its version memo and publishes its own events —
    /// `leaving`'s first, so a subscriber of both never sees the album in two places.
    /// Nothing is published when the transaction fails.
    ///
    /// - Parameters:
    ///   - leaving: the facade of the library the album leaves (its writer comes first).
    ///   - arriving: the facade of the library the album arrives in (a different library of
    ///     the same store).
    /// - Throws: `.libraryNotFound` when either library does not exist; what `body` throws.
    static func mutating<T>(
        leaving: LibraryFacade, arriving: LibraryFacade,
        _ body: (any AlbumStoreWriter, any AlbumStoreWriter) throws -> (T, leaving: [LibraryEvent], arriving: [LibraryEvent])
    ) throws(LibraryError) -> T {
        precondition(leaving.library != arriving.library, "a move between libraries needs two libraries")
        let outcome: (T, leaving: [LibraryEvent], arriving: [LibraryEvent])
        var tickets: (leaving: UInt64, arriving: UInt64)?
        do {
            outcome = try leaving.store.write([leaving.library, arriving.library]) { writers in
                tickets = (leaving.retake(tickets?.leaving), arriving.retake(tickets?.arriving))
                let outcome = try body(writers[0], writers[1])
                try leaving.recordChanges(outcome.leaving, writers[0])
                try arriving.recordChanges(outcome.arriving, writers[1])
                return outcome
            }
        } catch {
            if let tickets {
                leaving.commitOrder.finish(tickets.leaving, nil)
                arriving.commitOrder.finish(tickets.arriving, nil)
            }
            throw libraryError(from: error)
        }
        // The arriving library's events go out after the leaving one's (and after every
        // earlier commit of each library): its ticket is finished once `leaving` published.
        let arrivingEvents = outcome.arriving
        let arrivingTicket = tickets?.arriving
        leaving.noteCommit(outcome.leaving)
        arriving.noteCommit(arrivingEvents)
        leaving.publish(outcome.leaving, ticket: tickets?.leaving) {
            arriving.publish(arrivingEvents, ticket: arrivingTicket)
        }
        return outcome.0
    }

    /// Inside a write over both libraries: takes the album with `id` out of `source` and
    /// inserts it into `target` at `index` (already resolved), bumps both versions once, and
    /// pushes `undo` (if any) on the source's stack.
    ///
    /// - Returns: the album at its new index and each library's event.
    /// - Throws: `.notFound` when `source` has no such album.
    static func transfer(
        _ id: AlbumID, from source: (facade: LibraryFacade, writer: any AlbumStoreWriter),
        to target: (facade: LibraryFacade, writer: any AlbumStoreWriter),
        at index: (Int) throws -> Int, undo: (Album, Int) -> UndoCommand?
    ) throws -> (IndexedAlbum, leaving: LibraryEvent, arriving: LibraryEvent) {
        guard let album = try source.writer.album(id: id), let fromIndex = try source.writer.index(of: id) else {
            throw LibraryError.notFound(id)
        }
        let position = try index(try target.writer.count())
        try source.writer.delete(id: id)
        try target.writer.insert(album, at: position)
        let sourceVersion = try source.facade.finishMutation(source.writer, undo: undo(album, fromIndex))
        let targetVersion = try target.facade.finishMutation(target.writer, undo: nil)
        return (
            IndexedAlbum(album: album, index: position),
            .albumMovedOut(id: id, index: fromIndex, to: target.facade.library, version: sourceVersion),
            .albumMovedIn(id: id, index: position, from: source.facade.library, version: targetVersion)
        )
    }
}
