extension LibraryFacade {
    /// Undoes the newest mutation still on the stack (last in, first out), like the tutorial's
    /// Undo button.
    ///
    /// Rules:
    /// - The inverse is applied in one transaction that bumps the version; undo itself is not
    ///   recorded (there is no redo).
    /// - When the undo puts an album back (re-insert, move back, restore), it becomes
    ///   `client`'s current album, as the tutorial's undo went through `addAlbum:atIndex:`.
    /// - A command that no longer fits the library is discarded (so it cannot block older
    ///   commands forever) and reported as `.undoConflict`; the albums are not changed.
    /// - The undo of a move to another library (`moveBack`) is one transaction over both
    ///   libraries: it bumps both versions, records a change in both feeds and publishes
    ///   `album.deleted` (`movedTo`) there and `album.added` (`movedFrom`) here. It no longer
    ///   fits when the album is not in that library any more, or the library was deleted.
    /// - The undo of a batch that moved albums to other libraries is one transaction over this
    ///   library and all of them (`undoBatch(across:)`), all or none, as any batch's undo.
    /// - `reaches`: whether the caller may change another library; an undo that would change
    ///   one it may not is refused (`.undoConflict`, the stack untouched, the library not named).
    ///
    /// - Throws: `.undoStackEmpty`, `.undoConflict`, `.invalid` for a bad client name.
    /// The refusal of an undo that would change a library the caller may not change.
    static let outOfReach = LibraryError.undoConflict(
        "the last change also moved albums to or from another library that this key may not change; it stays on the stack for a key that may")

    @discardableResult
    public func undo(client: String = ClientName.default, reaches: (LibraryID) -> Bool = { _ in true }) throws(LibraryError) -> UndoResult {
        try ClientName.validate(client)
        // The top of the stack decides which transaction undoes it; a top that changed between
        // the two (another undo won the race) means looking again.
        for _ in 0..<Self.undoAttempts {
            let outcome: UndoOutcome? = try mutatingOrDropping { writer in
                guard let command = try writer.peekUndo() else { throw LibraryError.undoStackEmpty }
                if case .moveBack(_, _, let peer, _) = command, peer != library {
                    guard reaches(peer) else { throw Self.outOfReach }
                    return (.elsewhere(peer), [])
                }
                if case .batch(let commands) = command {
                    let peers = Self.peers(of: commands, besides: library)
                    guard peers.allSatisfy(reaches) else { throw Self.outOfReach }
                    if !peers.isEmpty { return (.elsewhereBatch(peers), []) }
                }
                _ = try writer.popUndo()
                if case .batch(let commands) = command {
                    let (version, events) = try applyBatch(commands, writer)
                    return (.applied(UndoResult(command: command, album: nil, version: version)), events)
                }
                guard let change = try apply(command, writer) else {
                    return (.conflict(command), [])
                }
                let version = try finishMutation(writer, undo: nil)
                var events = [change.event(version)]
                if let restored = change.album {
                    try writer.saveState(SavedState(
                        client: client, currentAlbumIndex: restored.index, albumID: restored.album.id, updatedAt: now()))
                    events.append(.stateChanged(client: client, index: restored.index, albumID: restored.album.id, version: version))
                }
                return (.applied(UndoResult(command: command, album: change.album, version: version)), events)
            }
            var settled = outcome
            if case .elsewhere(let peer) = outcome {
                settled = try undoMoveBack(from: peer, client: client)
            } else if case .elsewhereBatch(let peers) = outcome {
                settled = try undoBatch(across: peers)
            }
            switch settled {
            case .applied(let result):
                return result
            case .conflict(let command):
                throw .undoConflict("'\(command.summary)' no longer matches the library, so it was dropped")
            case .elsewhere, .elsewhereBatch, nil:
                continue
            }
        }
        throw .undoConflict("the undo stack kept changing while undoing; try again")
    }

    /// How often `undo` looks at the stack's top again when it changed under it.
    private static let undoAttempts = 16

    /// The undo stack's depth and what the next undo would do.
    public func undoStatus() throws(LibraryError) -> UndoStatus {
        try reading { reader in
            UndoStatus(depth: try reader.undoDepth(), next: try reader.peekUndo()?.summary)
        }
    }

    enum UndoOutcome {
        case applied(UndoResult)
        case conflict(UndoCommand)
        /// The top is a move back from library `peer`: it needs a write over both.
        case elsewhere(LibraryID)
        /// The top is a batch that moved albums to `peers`: it needs a write over all of them.
        case elsewhereBatch([LibraryID])
    }

    /// Undoes the `moveBack` from `peer` on top of the stack in one write over both libraries.
    /// - Returns: the outcome; `nil` when the top is no longer a move back from `peer`.
    private func undoMoveBack(from peer: LibraryID, client: String) throws(LibraryError) -> UndoOutcome? {
        do {
            let other = try peerFacade(peer)
            return try Self.mutating(leaving: other, arriving: self) { theirs, mine in
                guard let command = try mine.peekUndo(), case .moveBack(let id, _, let library, let index) = command,
                    library == peer
                else { return (nil, [], []) }
                _ = try mine.popUndo()
                guard try theirs.index(of: id) != nil else { return (.conflict(command), [], []) }
                let (restored, leaving, arriving) = try Self.transfer(
                    id, from: (other, theirs), to: (self, mine), at: { count in min(max(index, 0), count) },
                    finishSource: { writer, _, _ in try other.finishMutation(writer, undo: nil) })
                let version = arriving.version
                try mine.saveState(SavedState(
                    client: client, currentAlbumIndex: restored.index, albumID: id, updatedAt: now()))
                let state = LibraryEvent.stateChanged(client: client, index: restored.index, albumID: id, version: version)
                return (.applied(UndoResult(command: command, album: restored, version: version)), [leaving], [arriving, state])
            }
        } catch {
            guard case .libraryNotFound(let missing) = error, missing == peer else { throw error }
            // The album's library is gone, and the album with it: the command is dropped.
            return try mutating { writer in
                guard let command = try writer.peekUndo(), case .moveBack(_, _, let library, _) = command, library == peer
                else { return (nil, []) }
                _ = try writer.popUndo()
                return (.conflict(command), [])
            }
        }
    }

    /// Undoes a batch: its inverses newest first, each with its own version and event, as the
    /// batch made them. One that no longer fits rolls the whole undo back (`BatchUndoMismatch`).
    private func applyBatch(_ commands: [UndoCommand], _ writer: any AlbumStoreWriter) throws -> (Int64, [LibraryEvent]) {
        var events: [LibraryEvent] = []
        var version = try writer.version()
        for command in commands.reversed() {
            guard let change = try apply(command, writer) else { throw BatchUndoMismatch(command: command) }
            version = try finishMutation(writer, undo: nil)
            events.append(change.event(version))
        }
        return (version, events)
    }

    /// A batch's inverse that no longer fits: the undo is rolled back, then the batch dropped.
    struct BatchUndoMismatch: Error {
        let command: UndoCommand
    }

    /// `mutating` for the undo of the top command; a batch whose undo does not fit any more is
    /// dropped from the stack in a transaction of its own (the first one rolled back its
    /// partial undo with the pop) and reported as `.conflict`, as a single command is.
    private func mutatingOrDropping(_ body: (any AlbumStoreWriter) throws -> (UndoOutcome?, [LibraryEvent]))
        throws(LibraryError) -> UndoOutcome?
    {
        do {
            return try mutatingUntranslated(body)
        } catch let mismatch as BatchUndoMismatch {
            return try dropTopBatch { $0.contains(mismatch.command) }
        } catch {
            throw Self.libraryError(from: error)
        }
    }

    /// Drops the batch on top of the stack, in a transaction of its own, when `matches` says it
    /// is the one that no longer fits (reported as `.conflict`); nil when another undo took it
    /// meanwhile (look again).
    func dropTopBatch(_ matches: ([UndoCommand]) -> Bool) throws(LibraryError) -> UndoOutcome? {
        try mutating { writer in
            guard let top = try writer.peekUndo(), case .batch(let commands) = top, matches(commands) else { return (nil, []) }
            _ = try writer.popUndo()
            return (.conflict(top), [])
        }
    }

    /// What applying a command did: the album it put back (if any) and its event.
    struct AppliedUndo {
        var album: IndexedAlbum?
        var event: (Int64) -> LibraryEvent
    }

    /// Applies `command`; `nil` (and no change) when it does not fit the current library.
    func apply(_ command: UndoCommand, _ writer: any AlbumStoreWriter) throws -> AppliedUndo? {
        switch command {
        case .reinsert(let album, let index):
            // Album ids are unique across libraries: one imported elsewhere since blocks it.
            guard try writer.library(of: album.id) == nil else { return nil }
            let position = min(max(index, 0), try writer.count())
            try writer.insert(album, at: position)
            return AppliedUndo(album: IndexedAlbum(album: album, index: position)) {
                .albumAdded(id: album.id, index: position, version: $0)
            }
        case .remove(let id, _):
            guard let index = try writer.index(of: id) else { return nil }
            try writer.delete(id: id)
            return AppliedUndo(album: nil) { .albumDeleted(id: id, index: index, version: $0) }
        case .move(let id, _, let index):
            guard let album = try writer.album(id: id), let from = try writer.index(of: id) else { return nil }
            let to = min(max(index, 0), try writer.count() - 1)
            if from != to {
                try writer.move(id: id, to: to)
            }
            return AppliedUndo(album: IndexedAlbum(album: album, index: to)) {
                .albumMoved(id: id, from: from, to: to, version: $0)
            }
        case .restore(let previous):
            guard try writer.album(id: previous.id) != nil, let index = try writer.index(of: previous.id) else {
                return nil
            }
            try writer.update(previous)
            return AppliedUndo(album: IndexedAlbum(album: previous, index: index)) {
                .albumUpdated(id: previous.id, index: index, version: $0)
            }
        case .moveBack, .batch:
            // A move back needs the other library too: `undo` hands it to `undoMoveBack` (or,
            // in a batch, to `undoBatch(across:)`). Only one naming this library itself (never
            // written by a move; a damaged stack) comes here, or a batch inside a batch (never
            // written): dropped.
            return nil
        }
    }
}
