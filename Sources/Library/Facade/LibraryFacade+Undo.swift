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
    ///
    /// - Throws: `.undoStackEmpty`, `.undoConflict`, `.invalid` for a bad client name.
    @discardableResult
    public func undo(client: String = ClientName.default) throws(LibraryError) -> UndoResult {
        try ClientName.validate(client)
        let outcome: UndoOutcome = try mutating { writer in
            guard let command = try writer.popUndo() else { throw LibraryError.undoStackEmpty }
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
        switch outcome {
        case .applied(let result): return result
        case .conflict(let command):
            throw .undoConflict("'\(command.summary)' no longer matches the library, so it was dropped")
        }
    }

    /// The undo stack's depth and what the next undo would do.
    public func undoStatus() throws(LibraryError) -> UndoStatus {
        try reading { reader in
            UndoStatus(depth: try reader.undoDepth(), next: try reader.peekUndo()?.summary)
        }
    }

    private enum UndoOutcome {
        case applied(UndoResult)
        case conflict(UndoCommand)
    }

    /// What applying a command did: the album it put back (if any) and its event.
    private struct AppliedUndo {
        var album: IndexedAlbum?
        var event: (Int64) -> LibraryEvent
    }

    /// Applies `command`; `nil` (and no change) when it does not fit the current library.
    private func apply(_ command: UndoCommand, _ writer: any AlbumStoreWriter) throws -> AppliedUndo? {
        switch command {
        case .reinsert(let album, let index):
            guard try writer.album(id: album.id) == nil else { return nil }
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
        }
    }
}
