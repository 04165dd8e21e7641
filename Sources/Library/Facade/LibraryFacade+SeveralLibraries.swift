extension LibraryFacade {
    /// Runs `body` in one write transaction over the libraries of `leaving` and `arriving` (a
    /// move between libraries, or its undo): ``mutatingUntranslated(_:_:)`` over the two, with
    /// `leaving`'s events published first, so a subscriber of both never sees the album in two
    /// places.
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
        do {
            return try mutatingUntranslated([leaving, arriving]) { writers in
                let (value, leavingEvents, arrivingEvents) = try body(writers[0], writers[1])
                return (value, [leavingEvents, arrivingEvents])
            }
        } catch {
            throw libraryError(from: error)
        }
    }

    /// Runs `body` in one write transaction over the libraries of `facades` (different
    /// libraries of one store: a move between libraries, its undo, a batch that moves albums
    /// to other libraries), then lets each facade take note of the commit.
    ///
    /// Rules, as for a one-library `mutating`: `body` gets the writers and returns each
    /// library's events, both in the order of `facades`; the change feed entries of every
    /// library are derived from them and recorded inside the transaction; after the commit each
    /// facade updates its version memo and publishes its own events in the order of `facades`
    /// (the next one's once the previous one published, after every earlier commit of each):
    /// put the libraries albums leave before those they arrive in. Nothing is published when
    /// the transaction fails; what failed is thrown as it was.
    static func mutatingUntranslated<T>(
        _ facades: [LibraryFacade], _ body: ([any AlbumStoreWriter]) throws -> (T, [[LibraryEvent]])
    ) throws -> T {
        // The callers name each library once (and a move two different ones); were that ever
        // broken, the write fails as a failure of the server rather than stopping the process.
        guard !facades.isEmpty, Set(facades.map(\.library)).count == facades.count else {
            throw SeveralLibrariesMisuse(description: "a write over several libraries was asked for \(facades.map(\.library))")
        }
        let outcome: (T, [[LibraryEvent]])
        var tickets: [UInt64]?
        do {
            outcome = try facades[0].store.write(facades.map(\.library)) { writers in
                let previous = tickets
                tickets = facades.indices.map { facades[$0].retake(previous?[$0]) }
                let outcome = try body(writers)
                guard outcome.1.count == facades.count else {
                    throw SeveralLibrariesMisuse(description: "\(outcome.1.count) lists of events for \(facades.count) libraries")
                }
                for (facade, (events, writer)) in zip(facades, zip(outcome.1, writers)) {
                    try facade.recordChanges(events, writer)
                }
                return outcome
            }
        } catch {
            if let tickets {
                for (facade, ticket) in zip(facades, tickets) { facade.commitOrder.finish(ticket, nil) }
            }
            throw error
        }
        for (facade, events) in zip(facades, outcome.1) { facade.noteCommit(events) }
        // Each library's events go out after the previous library's (and after every earlier
        // commit of each library): its ticket is finished once the previous one published.
        var next: (@Sendable () -> Void)?
        for index in facades.indices.reversed() {
            let (facade, events, ticket, then) = (facades[index], outcome.1[index], tickets?[index], next)
            next = { facade.publish(events, ticket: ticket, then: then) }
        }
        next?()
        return outcome.0
    }

    /// A write over several libraries asked for in a way its callers never do (a library twice,
    /// events missing): the transaction is rolled back and the request fails as a server error.
    struct SeveralLibrariesMisuse: Error, CustomStringConvertible {
        let description: String
    }

    /// Inside a write over both libraries: takes the album with `id` out of `source` and
    /// inserts it into `target` at `index` (resolved from the target's count; it may refuse),
    /// bumps both versions once, and records the source's inverse with `finishSource`.
    ///
    /// - Parameter finishSource: bumps the source's version and records the undo command of
    ///   the album that left from the index it had (``finishMutation(_:undo:)`` with a
    ///   `moveBack`, or with none for the undo of a move; a batch collects it instead).
    /// - Returns: the album at its new index and each library's event.
    /// - Throws: `.notFound` when `source` has no such album; what `index` throws, before any
    ///   write.
    static func transfer(
        _ id: AlbumID, from source: (facade: LibraryFacade, writer: any AlbumStoreWriter),
        to target: (facade: LibraryFacade, writer: any AlbumStoreWriter),
        at index: (Int) throws -> Int, finishSource: (any AlbumStoreWriter, Album, Int) throws -> Int64
    ) throws -> (IndexedAlbum, leaving: LibraryEvent, arriving: LibraryEvent) {
        guard let album = try source.writer.album(id: id), let fromIndex = try source.writer.index(of: id) else {
            throw LibraryError.notFound(id)
        }
        let position = try index(try target.writer.count())
        try source.writer.delete(id: id)
        try target.writer.insert(album, at: position)
        let sourceVersion = try finishSource(source.writer, album, fromIndex)
        let targetVersion = try target.facade.finishMutation(target.writer, undo: nil)
        return (
            IndexedAlbum(album: album, index: position),
            .albumMovedOut(id: id, index: fromIndex, to: target.facade.library, version: sourceVersion),
            .albumMovedIn(id: id, index: position, from: source.facade.library, version: targetVersion)
        )
    }
}
