import BlueLibraryAPI

/// The album an operation of a batch acts on.
public enum BatchTarget: Sendable, Equatable {
    /// The album with this id (text as the client sent it: an id that is not one is refused
    /// as a single request's would be, `.invalidAlbumID`).
    case id(String)
    /// The album at this index when the operation runs (deletes only).
    case index(Int)
    /// The album that operation `n` (earlier in the same batch, an add) added: a client that
    /// adds an album and then changes it in one batch does not know its id yet.
    case added(by: Int)
}

/// One operation of a batch, checked by the same rules as the single request it stands for.
public enum BatchStep {
    case add(AlbumInput, index: Int?)
    case update(BatchTarget, AlbumPatch, ifMatch: ((Album) -> Bool)?)
    case move(BatchTarget, to: Int)
    /// A move to `library` (`Libraries.move`): to another library at `index` there (nil or past
    /// the end appends, negative is `.indexOutOfRange`), or, naming the batch's own library, a
    /// move within it (nil: the last position).
    case moveToLibrary(BatchTarget, library: LibraryID, index: Int?)
    case delete(BatchTarget, ifMatch: ((Album) -> Bool)?)
}

/// What a batch did.
public enum BatchOutcome: Sendable, Equatable {
    /// Committed. One result per operation, in order: the album as the single request answers
    /// it, with the version its change made (nil when it changed nothing), or the refusal the
    /// single request would have got (only when not atomic). `version` is the library's after.
    case committed([BatchResult], version: Int64)
    /// Atomic, and operation `operation` was refused: nothing was applied.
    case rolledBack(operation: Int, error: LibraryError)
}

/// One operation's result in a committed batch.
public enum BatchResult: Sendable, Equatable {
    case applied(IndexedAlbum, version: Int64?)
    /// Moved to another library: the album at its index in `library`; `version` is the batch's
    /// library's version that its leaving made, `arrival` the version of `library` that its
    /// arriving made.
    case moved(IndexedAlbum, to: LibraryID, version: Int64, arrival: Int64)
    case refused(LibraryError)
}

extension LibraryFacade {
    /// Applies `steps` in order in **one** write transaction (one writer job: on SQLite one
    /// job of the writer queue, on PostgreSQL one job of the library's write group; with moves
    /// to other libraries, one transaction over all of them, as a single move between
    /// libraries is).
    ///
    /// Rules:
    /// - Each operation keeps the rules of its single request and makes its own change: its
    ///   own version, change feed entry and event, published after the commit in version order
    ///   (a subscriber sees the changes one by one, as if sent one by one without anything in
    ///   between). Saved states are not touched (a batch is not one client's selection).
    /// - A move to another library (`.moveToLibrary`) is `Libraries.move`'s: this library's
    ///   version and the other's are bumped once each, this library's feed records a
    ///   `.deleted` with `peer` and publishes `albumMovedOut`, the other's a `.added` and
    ///   `albumMovedIn`. After the commit this library publishes all its events first, then each
    ///   other library its own (so no subscriber sees an album in two places). An album that
    ///   left is no longer in this library: a later operation naming it is refused (`.notFound`).
    /// - `atomic`: the first refused operation rolls everything back (`.rolledBack`); nothing is
    ///   in the feed, no event goes out. Not atomic: a refused operation is reported and the
    ///   others apply. Every refusal is decided before the operation writes anything, so a
    ///   refused operation never leaves half a change; a failure of the store fails the whole
    ///   batch (thrown, nothing applied) in either mode. A move to a library that does not
    ///   exist, or that `mayMoveTo` says no to (the caller may not write there: for it, the
    ///   library does not exist), is refused (`.libraryNotFound` naming it).
    /// - Undo: the applied operations' inverses are pushed as **one** command (`.batch`) on
    ///   this library's stack, so one undo takes back the whole batch, moves to other libraries
    ///   included (their `moveBack`, as a single move's: the other libraries' stacks get
    ///   nothing); one operation alone pushes its own command, as a single request.
    /// - `budget`: the longest the batch may run in the writer; past it the batch is rolled back
    ///   (`.writeTimedOut`), so one batch on a slow database cannot hold every other writer of
    ///   the library for long.
    ///
    /// - Throws: `.libraryNotFound` (this library), `.writeTimedOut`, `.storage`.
    public func apply(
        _ steps: [BatchStep], atomic: Bool, budget: Duration = .seconds(5), mayMoveTo: (LibraryID) -> Bool = { _ in true }
    ) throws(LibraryError) -> BatchOutcome {
        var destinations = try destinations(of: steps, allowed: mayMoveTo)
        // A library deleted between the look-up and the transaction (by another instance) fails
        // the transaction before its body runs: the batch runs again without it.
        for _ in 0...destinations.count {
            do {
                return try Self.mutatingUntranslated([self] + destinations) { writers in
                    try run(steps, atomic: atomic, budget: budget, writers, destinations: destinations)
                }
            } catch let abort as BatchAbort {
                return .rolledBack(operation: abort.operation, error: abort.error)
            } catch LibraryError.libraryNotFound(let missing) where missing != library && destinations.contains(where: { $0.library == missing }) {
                destinations.removeAll { $0.library == missing }
            } catch {
                throw Self.libraryError(from: error)
            }
        }
        throw .storage(UnderlyingError(BatchLibrariesVanished()))
    }

    /// The facades of the other libraries `steps` move albums to, in the order first named;
    /// a library that does not exist or is not `allowed` is left out (its moves are refused).
    private func destinations(of steps: [BatchStep], allowed: (LibraryID) -> Bool) throws(LibraryError) -> [LibraryFacade] {
        var named: Set<LibraryID> = [library]
        var facades: [LibraryFacade] = []
        for case let .moveToLibrary(_, other, _) in steps where named.insert(other).inserted && allowed(other) {
            do {
                facades.append(try peerFacade(other))
            } catch {
                guard case .libraryNotFound = error else { throw error }
            }
        }
        return facades
    }

    /// The batch inside its transaction: `writers[0]` is this library's, then one per
    /// destination. Returns the outcome and each library's events.
    private func run(_ steps: [BatchStep], atomic: Bool, budget: Duration, _ writers: [any AlbumStoreWriter],
                     destinations: [LibraryFacade]) throws -> (BatchOutcome, [[LibraryEvent]])
    {
        let clock = ContinuousClock()
        let start = clock.now  // in the writer: time waiting for it does not count
        let writer = writers[0]
        var results: [BatchResult] = []
        results.reserveCapacity(steps.count)
        var inverses: [UndoCommand] = []
        var events: [[LibraryEvent]] = Array(repeating: [], count: writers.count)
        let finish: Finish = { writer, inverse in
            inverses.append(inverse)
            return try writer.bumpVersion()
        }
        for (number, step) in steps.enumerated() {
            if clock.now - start > budget { throw Self.timedOut(budget, steps.count) }
            do {
                if case let .moveToLibrary(target, other, index) = step, other != library {
                    guard let position = destinations.firstIndex(where: { $0.library == other }) else {
                        throw LibraryError.libraryNotFound(other)
                    }
                    let id = try albumID(target, results)
                    let (moved, leaving, arriving) = try Self.transfer(
                        id, from: (self, writer), to: (destinations[position], writers[position + 1]),
                        at: { count in try InsertionIndex.resolve(requested: index, count: count) },
                        finishSource: { writer, album, fromIndex in
                            try finish(writer, .moveBack(id: id, title: album.title, library: other, index: fromIndex))
                        })
                    results.append(.moved(moved, to: other, version: leaving.version, arrival: arriving.version))
                    events[0].append(leaving)
                    events[position + 1].append(arriving)
                } else {
                    let (album, stepEvents) = try apply(step, results: results, writer, finish: finish)
                    results.append(.applied(album, version: stepEvents.first?.version))
                    events[0] += stepEvents
                }
            } catch {
                let refusal = Self.libraryError(from: error)
                guard isRefusal(refusal) else { throw error }
                if atomic { throw BatchAbort(operation: number, error: refusal) }
                results.append(.refused(refusal))
            }
        }
        if let inverse = inverses.count == 1 ? inverses.first : inverses.isEmpty ? nil : .batch(inverses) {
            try writer.pushUndo(inverse, limit: undoLimit)
        }
        return (BatchOutcome.committed(results, version: try writer.version()), events)
    }

    /// Every library a batch moves albums to was deleted while it started, again and again.
    private struct BatchLibrariesVanished: Error, CustomStringConvertible {
        var description: String { "the libraries of the batch's moves kept disappearing while it started" }
    }

    /// The first refused operation of an atomic batch, thrown to roll the transaction back.
    private struct BatchAbort: Error {
        let operation: Int
        let error: LibraryError
    }

    /// Whether `error` is an operation's refusal by the rules (checked before it writes), as
    /// opposed to a failure of the store or the library: a move's target library that does
    /// not exist is a refusal, this library missing is not.
    private func isRefusal(_ error: LibraryError) -> Bool {
        switch error {
        case .notFound, .invalidAlbumID, .indexOutOfRange, .invalid, .preconditionFailed: true
        case .libraryNotFound(let missing): missing != library
        default: false
        }
    }

    /// A target that names no album: the field `ref` (or `index`) of the operation.
    private static func badTarget(_ message: String) -> LibraryError {
        .invalid(ValidationFailure([FieldError(field: "ref", message: "ref: " + message)]))
    }

    private static func timedOut(_ budget: Duration, _ count: Int) -> LibraryError {
        .writeTimedOut(
            "the batch of \(count) operations ran longer than \(budget) in the writer (the database is slow now) and "
                + "nothing was applied; send it again, or in smaller batches")
    }

    private func apply(_ step: BatchStep, results: [BatchResult], _ writer: any AlbumStoreWriter, finish: Finish) throws
        -> (IndexedAlbum, [LibraryEvent])
    {
        switch step {
        case let .add(input, index):
            return try addAlbum(input, at: index, writer, finish: finish)
        case let .update(target, patch, ifMatch):
            return try updateAlbum(id: try albumID(target, results), patch: patch, ifMatch: ifMatch, writer, finish: finish)
        case let .move(target, index):
            return try moveAlbum(id: try albumID(target, results), to: index, writer, finish: finish)
        case let .moveToLibrary(target, _, index):
            // To this library itself (`run` takes the others): a move within it, the last
            // position when no index is given, as `Libraries.move` does.
            let id = try albumID(target, results)
            guard try writer.index(of: id) != nil else { throw LibraryError.notFound(id) }
            return try moveAlbum(id: id, to: index ?? (try writer.count() - 1), writer, finish: finish)
        case let .delete(.index(index), ifMatch):
            return try deleteAlbum(at: index, ifMatch: ifMatch, writer, finish: finish)
        case let .delete(target, ifMatch):
            return try deleteAlbum(id: try albumID(target, results), ifMatch: ifMatch, writer, finish: finish)
        }
    }

    /// The id `target` names; an earlier add that was refused names none (a 422 naming `ref`).
    private func albumID(_ target: BatchTarget, _ results: [BatchResult]) throws(LibraryError) -> AlbumID {
        switch target {
        case let .id(text):
            guard let id = AlbumID(text) else { throw .invalidAlbumID(text) }
            return id
        case let .added(by: operation):
            guard results.indices.contains(operation), case let .applied(added, _) = results[operation] else {
                throw Self.badTarget("operation \(operation) added no album (it was refused), so there is nothing for this one to act on")
            }
            return added.album.id
        case .index:
            // Only deletes act on an index; the wire module never makes another step with one.
            throw Self.badTarget("only a delete may name its album by index; name the album by id")
        }
    }
}
