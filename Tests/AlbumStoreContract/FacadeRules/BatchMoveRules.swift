import BlueLibraryAPI
import Foundation
import Library
import Testing

/// Moves to other libraries inside a batch (`BatchStep.moveToLibrary`): in the batch's one
/// transaction, with the single move's versions, feeds and events in both libraries, and taken
/// back by the batch's one undo.
struct BatchMoveRules {
    let factory: AlbumStoreFactory
    let jazz = LibraryID(rawValue: "jazz")
    let rock = LibraryID(rawValue: "rock")

    /// The change feed of `library` after `since`, as "kind id index peer".
    func feed(_ fixture: RegistryFixture, _ library: LibraryID, since: Int64) throws -> [String] {
        try fixture.facade(library).changes(since: since, limit: 100).changes.map {
            "\($0.kind) \($0.id?.rawValue ?? "-") \($0.index ?? -1) \($0.peer?.rawValue ?? "-")"
        }
    }

    /// Default holds A, B, C (versions 1 to 3), jazz holds X (version 1).
    func given() throws -> (RegistryFixture, [Album]) {
        let fixture = try RegistryFixture(factory, libraries: ["jazz"])
        let abc = try fixture.add("A", "B", "C", to: .default)
        try fixture.add("X", to: jazz)
        return (fixture, abc)
    }

    /// Adds D, moves B to the start of jazz, retitles A, moves D (by ref) to the end of jazz.
    func steps(_ abc: [Album]) -> [BatchStep] {
        [
            .add(input("D"), index: nil),
            .moveToLibrary(.id(abc[1].id.rawValue), library: jazz, index: 0),
            .update(.id(abc[0].id.rawValue), AlbumPatch(title: .set("A2")), ifMatch: nil),
            .moveToLibrary(.added(by: 0), library: jazz, index: nil),
        ]
    }

    func commitsInBoth() throws {
        let (fixture, abc) = try given()
        let (source, target) = (try fixture.facade(.default), try fixture.facade(jazz))
        #expect(try source.currentVersion() == 3 && target.currentVersion() == 1)
        let (sourceEvents, targetEvents) = (fixture.sink(.default).events.count, fixture.sink(jazz).events.count)
        let depth = try source.undoStatus().depth
        // When one batch adds, moves out, edits and moves out the album it added
        let outcome = try source.apply(steps(abc), atomic: true)
        guard case let .committed(results, version) = outcome else { Issue.record("rolled back: \(outcome)"); return }
        guard case let .applied(added, _) = results[0] else { Issue.record("\(results[0])"); return }
        let d = added.album.id
        // Then each library changed once per change, memos included
        #expect(version == 7)
        #expect(results[1] == .moved(IndexedAlbum(album: abc[1], index: 0), to: jazz, version: 5, arrival: 2))
        #expect(results[3] == .moved(IndexedAlbum(album: added.album, index: 2), to: jazz, version: 7, arrival: 3))
        #expect(try fixture.titles(.default) == ["A2", "C"])
        #expect(try fixture.titles(jazz) == ["B", "X", "D"])
        #expect(try fixture.storedVersion(.default) == 7 && fixture.storedVersion(jazz) == 3)
        #expect(try source.currentVersion() == 7 && target.currentVersion() == 3)
        // And each library published its events and recorded its changes, as single moves do
        #expect(Array(fixture.sink(.default).events.dropFirst(sourceEvents)) == [
            .albumAdded(id: d, index: 3, version: 4),
            .albumMovedOut(id: abc[1].id, index: 1, to: jazz, version: 5),
            .albumUpdated(id: abc[0].id, index: 0, version: 6),
            .albumMovedOut(id: d, index: 2, to: jazz, version: 7),
        ])
        #expect(Array(fixture.sink(jazz).events.dropFirst(targetEvents)) == [
            .albumMovedIn(id: abc[1].id, index: 0, from: .default, version: 2),
            .albumMovedIn(id: d, index: 2, from: .default, version: 3),
        ])
        #expect(try feed(fixture, .default, since: 3) == [
            "added \(d) 3 -", "deleted \(abc[1].id) 1 jazz", "updated \(abc[0].id) 0 -", "deleted \(d) 2 jazz",
        ])
        #expect(try feed(fixture, jazz, since: 1) == ["added \(abc[1].id) 0 default", "added \(d) 2 default"])
        // And only the source's stack got a command: the whole batch
        #expect(try source.undoStatus() == UndoStatus(depth: depth + 1, next: "take back a batch of 4 changes"))
        #expect(try target.undoStatus() == UndoStatus(depth: 1, next: "remove the added album 'X'"))
    }

    func atomicRefusalAfterTheMoveLeavesBoth() throws {
        let (fixture, abc) = try given()
        let (source, target) = (try fixture.facade(.default), try fixture.facade(jazz))
        let (sourceEvents, targetEvents) = (fixture.sink(.default).events.count, fixture.sink(jazz).events.count)
        let undo = (try source.undoStatus(), try target.undoStatus())
        let missing = AlbumIDGenerator.random(clock: { Date() }).next()
        // When an atomic batch moves B to jazz and then names an album that does not exist
        let outcome = try source.apply([
            .moveToLibrary(.id(abc[1].id.rawValue), library: jazz, index: 0),
            .delete(.id(missing.rawValue), ifMatch: nil),
        ], atomic: true)
        // Then nothing is applied in either library: albums, versions, feeds, events, undo
        #expect(outcome == .rolledBack(operation: 1, error: .notFound(missing)))
        #expect(try fixture.titles(.default) == ["A", "B", "C"] && fixture.titles(jazz) == ["X"])
        #expect(try fixture.storedVersion(.default) == 3 && fixture.storedVersion(jazz) == 1)
        #expect(try source.currentVersion() == 3 && target.currentVersion() == 1)
        #expect(try feed(fixture, .default, since: 3).isEmpty && feed(fixture, jazz, since: 1).isEmpty)
        #expect(fixture.sink(.default).events.count == sourceEvents && fixture.sink(jazz).events.count == targetEvents)
        #expect(try (source.undoStatus(), target.undoStatus()) == undo)
        // And a move's own refusals roll back too: a negative index, a library that does not exist
        #expect(try source.apply([.moveToLibrary(.id(abc[0].id.rawValue), library: jazz, index: -1)], atomic: true)
            == .rolledBack(operation: 0, error: .indexOutOfRange(index: -1, count: 1)))
        #expect(try source.apply([
            .add(input("E"), index: nil), .moveToLibrary(.id(abc[0].id.rawValue), library: rock, index: nil),
        ], atomic: true) == .rolledBack(operation: 1, error: .libraryNotFound(rock)))
        #expect(try fixture.titles(.default) == ["A", "B", "C"] && fixture.titles(jazz) == ["X"])
    }

    func notAtomicReportsEachMove() throws {
        let (fixture, abc) = try given()
        let source = try fixture.facade(.default)
        // When a batch that is not atomic moves to a missing library, within its own, and out,
        // and then names the album that left
        let outcome = try source.apply([
            .moveToLibrary(.id(abc[0].id.rawValue), library: rock, index: nil),
            .moveToLibrary(.id(abc[0].id.rawValue), library: .default, index: nil),
            .moveToLibrary(.id(abc[1].id.rawValue), library: jazz, index: 5),
            .update(.id(abc[1].id.rawValue), AlbumPatch(year: .set(1999)), ifMatch: nil),
        ], atomic: false)
        guard case let .committed(results, version) = outcome else { Issue.record("rolled back: \(outcome)"); return }
        // Then the refused ones say why and the others applied (past the end appends)
        #expect(results[0] == .refused(.libraryNotFound(rock)))
        #expect(results[1] == .applied(IndexedAlbum(album: abc[0], index: 2), version: 4))
        #expect(results[2] == .moved(IndexedAlbum(album: abc[1], index: 1), to: jazz, version: 5, arrival: 2))
        #expect(results[3] == .refused(.notFound(abc[1].id)))
        #expect(version == 5)
        #expect(try fixture.titles(.default) == ["C", "A"] && fixture.titles(jazz) == ["X", "B"])
        // And one undo takes back exactly what applied, in both libraries
        _ = try source.undo()
        #expect(try fixture.titles(.default) == ["A", "B", "C"] && fixture.titles(jazz) == ["X"])
    }

    func undoRestoresBoth() throws {
        let (fixture, abc) = try given()
        let (source, target) = (try fixture.facade(.default), try fixture.facade(jazz))
        let before = try fixture.facade(.default).page(PageRequest(limit: 500)).items.map(\.album)
        let depth = try source.undoStatus().depth
        guard case .committed = try source.apply(steps(abc), atomic: true) else { Issue.record("rolled back"); return }
        let (sourceEvents, targetEvents) = (fixture.sink(.default).events.count, fixture.sink(jazz).events.count)
        // When default undoes the batch once
        let result = try source.undo(client: "phone")
        // Then both libraries are as before (fields, timestamps, order), in one step
        #expect(try source.page(PageRequest(limit: 500)).items.map(\.album) == before)
        #expect(try fixture.titles(jazz) == ["X"])
        #expect(result.command.summary == "take back a batch of 4 changes" && result.album == nil)
        // With one version and one event per inverse here, and one per album taken back there
        #expect(result.version == 11)
        #expect(try fixture.storedVersion(.default) == 11 && fixture.storedVersion(jazz) == 5)
        #expect(try source.currentVersion() == 11 && target.currentVersion() == 5)
        let d = try #require(fixture.sink(.default).events.dropFirst(sourceEvents).first?.albumID)
        #expect(Array(fixture.sink(jazz).events.dropFirst(targetEvents)) == [
            .albumMovedOut(id: d, index: 2, to: .default, version: 4),
            .albumMovedOut(id: abc[1].id, index: 0, to: .default, version: 5),
        ])
        #expect(Array(fixture.sink(.default).events.dropFirst(sourceEvents)) == [
            .albumMovedIn(id: d, index: 2, from: jazz, version: 8),
            .albumUpdated(id: abc[0].id, index: 0, version: 9),
            .albumMovedIn(id: abc[1].id, index: 1, from: jazz, version: 10),
            .albumDeleted(id: d, index: 3, version: 11),
        ])
        #expect(try feed(fixture, jazz, since: 3) == ["deleted \(d) 2 default", "deleted \(abc[1].id) 0 default"])
        // And the stacks are as before the batch (no state event above: saved states untouched)
        #expect(try source.undoStatus().depth == depth && target.undoStatus().depth == 1)
    }

    func undoThatNoLongerFitsIsDropped() throws {
        let (fixture, abc) = try given()
        let (source, target) = (try fixture.facade(.default), try fixture.facade(jazz))
        _ = try source.apply([
            .update(.id(abc[0].id.rawValue), AlbumPatch(title: .set("A2")), ifMatch: nil),
            .moveToLibrary(.id(abc[1].id.rawValue), library: jazz, index: nil),
        ], atomic: true)
        // And jazz deletes the album that arrived
        try target.delete(id: abc[1].id)
        let versions = (try fixture.storedVersion(.default), try fixture.storedVersion(jazz))
        // When default undoes the batch
        let error = libraryError { _ = try source.undo() }
        // Then nothing changes in either library (the edit is not taken back alone), and the
        // batch is dropped
        guard case .undoConflict? = error else { Issue.record("expected undoConflict, got \(String(describing: error))"); return }
        #expect(try fixture.titles(.default) == ["A2", "C"] && fixture.titles(jazz) == ["X"])
        #expect(try (fixture.storedVersion(.default), fixture.storedVersion(jazz)) == versions)
        #expect(try source.undoStatus().next == "remove the added album 'C'")
        // And a batch whose library was deleted since is dropped the same way
        let rockFacade = try fixture.libraries.create(id: "rock")
        _ = try source.apply([
            .moveToLibrary(.id(abc[2].id.rawValue), library: rockFacade.id, index: nil),
            .update(.id(abc[0].id.rawValue), AlbumPatch(title: .set("A3")), ifMatch: nil),
        ], atomic: true)
        try fixture.libraries.delete(rock, force: true)
        guard case .undoConflict? = libraryError({ _ = try source.undo() }) else { Issue.record("expected undoConflict"); return }
        #expect(try fixture.titles(.default) == ["A3"])
        #expect(try source.undoStatus().next == "remove the added album 'C'")
    }
}

extension LibraryEvent {
    /// The album the event is about, if any.
    var albumID: AlbumID? {
        switch self {
        case let .albumAdded(id, _, _), let .albumUpdated(id, _, _), let .albumDeleted(id, _, _), let .albumMoved(id, _, _, _),
             let .albumMovedIn(id, _, _, _), let .albumMovedOut(id, _, _, _):
            id
        default:
            nil
        }
    }
}

extension FacadeRules {
    static let batchMoveRules: [ContractCheck] = [
        ContractCheck("a batch's moves to another library commit with it, in both libraries") { try BatchMoveRules(factory: $0).commitsInBoth() },
        ContractCheck("an atomic batch refused after a move to another library leaves both untouched") {
            try BatchMoveRules(factory: $0).atomicRefusalAfterTheMoveLeavesBoth()
        },
        ContractCheck("a batch that is not atomic reports each move to another library") { try BatchMoveRules(factory: $0).notAtomicReportsEachMove() },
        ContractCheck("one undo takes back a batch's moves to other libraries, in both") { try BatchMoveRules(factory: $0).undoRestoresBoth() },
        ContractCheck("the undo of a batch whose moved album left its new library is dropped, changing nothing") {
            try BatchMoveRules(factory: $0).undoThatNoLongerFitsIsDropped()
        },
    ]
}
