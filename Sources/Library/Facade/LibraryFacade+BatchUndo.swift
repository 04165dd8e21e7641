extension LibraryFacade {
    /// The other libraries a batch's inverses move albums back from (its moves to other
    /// libraries), in the order first named.
    static func peers(of commands: [UndoCommand], besides library: LibraryID) -> [LibraryID] {
        var peers: [LibraryID] = []
        for case let .moveBack(_, _, peer, _) in commands where peer != library && !peers.contains(peer) {
            peers.append(peer)
        }
        return peers
    }

    /// Undoes the batch on top of the stack that moved albums to `peers`, in one write over
    /// this library and every one of them: its inverses newest first, each with its own
    /// version and event; a `moveBack` takes the album out of its library and puts it back here
    /// at the index it had (as the undo of a single move, bumping both versions, with a change
    /// in both feeds), the others apply here. All or none: one that no longer fits (the album
    /// is not in that library any more, or the library was deleted) rolls the whole undo back
    /// and the batch is dropped (`.conflict`). Events: each peer's first (albums leave them),
    /// then this library's. Saved states are not touched, as for any batch's undo.
    ///
    /// - Returns: the outcome; nil when the top is no longer that batch (look again).
    func undoBatch(across peers: [LibraryID]) throws(LibraryError) -> UndoOutcome? {
        let isThisBatch = { (commands: [UndoCommand]) in Self.peers(of: commands, besides: self.library) == peers }
        var others: [LibraryFacade] = []
        for peer in peers {
            do {
                others.append(try peerFacade(peer))
            } catch {
                guard case .libraryNotFound = error else { throw error }
                return try dropTopBatch(isThisBatch)  // the library is gone, and its albums with it
            }
        }
        do {
            return try Self.mutatingUntranslated(others + [self]) { writers in
                let mine = writers[others.count]
                var events = [[LibraryEvent]](repeating: [], count: writers.count)
                guard let command = try mine.peekUndo(), case .batch(let commands) = command, isThisBatch(commands) else {
                    return (nil, events)
                }
                _ = try mine.popUndo()
                var version = try mine.version()
                for inverse in commands.reversed() {
                    if case let .moveBack(id, _, peer, index) = inverse, let position = peers.firstIndex(of: peer) {
                        guard try writers[position].index(of: id) != nil else { throw BatchUndoMismatch(command: inverse) }
                        let other = others[position]
                        let (_, leaving, arriving) = try Self.transfer(
                            id, from: (other, writers[position]), to: (self, mine), at: { count in min(max(index, 0), count) },
                            finishSource: { writer, _, _ in try other.finishMutation(writer, undo: nil) })
                        version = arriving.version
                        events[position].append(leaving)
                        events[others.count].append(arriving)
                    } else {
                        guard let change = try apply(inverse, mine) else { throw BatchUndoMismatch(command: inverse) }
                        version = try finishMutation(mine, undo: nil)
                        events[others.count].append(change.event(version))
                    }
                }
                return (.applied(UndoResult(command: command, album: nil, version: version)), events)
            }
        } catch let mismatch as BatchUndoMismatch {
            return try dropTopBatch { $0.contains(mismatch.command) }
        } catch LibraryError.libraryNotFound(let missing) where peers.contains(missing) {
            return try dropTopBatch(isThisBatch)  // deleted since the look-up
        } catch {
            throw Self.libraryError(from: error)
        }
    }
}
