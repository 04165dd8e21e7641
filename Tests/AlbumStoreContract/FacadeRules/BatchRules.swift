import BlueLibraryAPI
import Foundation
import Library
import Testing

/// Batches (`LibraryFacade.apply`): one transaction, one version and one event per change,
/// all or nothing unless asked otherwise, one undo step.
struct BatchRules {
    let factory: AlbumStoreFactory

    /// The change feed after `since`, as (kind, id, index).
    func feed(_ fixture: FacadeFixture, since: Int64) throws -> [String] {
        try fixture.facade.changes(since: since, limit: 100).changes.map { "\($0.kind) \($0.id?.rawValue ?? "-") \($0.index ?? -1)" }
    }

    /// The version an applied operation made; nil for a refused one.
    static func version(_ result: BatchResult) -> Int64? {
        if case let .applied(_, version) = result { return version }
        return nil
    }

    func appliesInOrder() throws {
        // Given A, B, C
        let fixture = try FacadeFixture(factory)
        let abc = try fixture.add("A", "B", "C")
        let events = fixture.sink.events.count
        let depth = try fixture.facade.undoStatus().depth
        // When one batch adds D at 0, sets its year (by ref), moves B to the front and deletes index 3
        let outcome = try fixture.facade.apply([
            .add(input("D"), index: 0),
            .update(.added(by: 0), AlbumPatch(year: .set(1977)), ifMatch: nil),
            .move(.id(abc[1].id.rawValue), to: 0),
            .delete(.index(3), ifMatch: nil),
        ], atomic: true)
        // Then each operation made its own version, in order
        guard case let .committed(results, version) = outcome else { Issue.record("rolled back: \(outcome)"); return }
        #expect(version == 7)
        #expect(results.map(Self.version) == [4, 5, 6, 7])
        guard case let .applied(added, _) = results[0], case let .applied(patched, _) = results[1] else { return }
        #expect(patched.album.id == added.album.id && patched.album.year == 1977)
        #expect(try fixture.titles() == ["B", "D", "A"])
        // And one event and one change per operation, in version order, with no state change
        let published = Array(fixture.sink.events.dropFirst(events))
        #expect(published == [
            .albumAdded(id: added.album.id, index: 0, version: 4),
            .albumUpdated(id: added.album.id, index: 0, version: 5),
            .albumMoved(id: abc[1].id, from: 2, to: 0, version: 6),
            .albumDeleted(id: abc[2].id, index: 3, version: 7),
        ])
        #expect(try feed(fixture, since: 3) == [
            "added \(added.album.id) 0", "updated \(added.album.id) 0", "moved \(abc[1].id) 0", "deleted \(abc[2].id) 3",
        ])
        // And the undo stack got one command for the whole batch
        #expect(try fixture.facade.undoStatus() == UndoStatus(depth: depth + 1, next: "take back a batch of 4 changes"))
    }

    func atomicRefusalAppliesNothing() throws {
        // Given A, B
        let fixture = try FacadeFixture(factory)
        let ab = try fixture.add("A", "B")
        let before = try fixture.storedAlbums()
        let (events, undo) = (fixture.sink.events.count, try fixture.facade.undoStatus())
        let missing = AlbumIDGenerator.random(clock: { Date() }).next()
        // When an atomic batch's second operation names an album that does not exist
        let outcome = try fixture.facade.apply([
            .delete(.id(ab[0].id.rawValue), ifMatch: nil),
            .update(.id(missing.rawValue), AlbumPatch(year: .set(1990)), ifMatch: nil),
            .add(input("C"), index: nil),
        ], atomic: true)
        // Then it is reported, and nothing is applied: albums, version, feed, events, undo
        #expect(outcome == .rolledBack(operation: 1, error: .notFound(missing)))
        #expect(try fixture.storedAlbums() == before)
        #expect(try fixture.facade.version() == 2)
        #expect(try feed(fixture, since: 2) == [])
        #expect(fixture.sink.events.count == events)
        #expect(try fixture.facade.undoStatus() == undo)
        // And a failed If-Match, an index past the end and an id that is not one are refusals too
        #expect(try fixture.facade.apply([.delete(.id(ab[1].id.rawValue), ifMatch: { _ in false })], atomic: true)
            == .rolledBack(operation: 0, error: .preconditionFailed(ab[1].id)))
        #expect(try fixture.facade.apply([.delete(.index(1), ifMatch: { _ in false })], atomic: true)
            == .rolledBack(operation: 0, error: .preconditionFailed(ab[1].id)))
        #expect(try fixture.facade.apply([.move(.id(ab[1].id.rawValue), to: 2)], atomic: true)
            == .rolledBack(operation: 0, error: .indexOutOfRange(index: 2, count: 2)))
        #expect(try fixture.facade.apply([.add(input("X"), index: nil), .delete(.id("nope"), ifMatch: nil)], atomic: true)
            == .rolledBack(operation: 1, error: .invalidAlbumID("nope")))
        #expect(try fixture.storedAlbums() == before)
    }

    func notAtomicAppliesTheRest() throws {
        // Given A, B
        let fixture = try FacadeFixture(factory)
        let ab = try fixture.add("A", "B")
        // When a batch that is not atomic has two refused operations among three good ones
        let outcome = try fixture.facade.apply([
            .add(input("C"), index: nil),
            .move(.id(ab[0].id.rawValue), to: 9),
            .update(.added(by: 0), AlbumPatch(title: .set("C2")), ifMatch: nil),
            .add(input("Never"), index: -1),
            .update(.added(by: 3), AlbumPatch(year: .set(2000)), ifMatch: nil),
            .delete(.id(ab[1].id.rawValue), ifMatch: nil),
        ], atomic: false)
        guard case let .committed(results, version) = outcome else { Issue.record("rolled back: \(outcome)"); return }
        // Then the good ones applied with their own versions, the refused ones say why
        #expect(version == 5)
        #expect(try fixture.titles() == ["A", "C2"])
        #expect(results[1] == .refused(.indexOutOfRange(index: 9, count: 3)))
        #expect(results[3] == .refused(.indexOutOfRange(index: -1, count: 3)))
        guard case let .refused(.invalid(failure)) = results[4] else { Issue.record("\(results[4])"); return }
        #expect(failure.fields == ["ref"])
        #expect(results.compactMap(Self.version) == [3, 4, 5])
        // And one undo takes back exactly what applied
        _ = try fixture.facade.undo()
        #expect(try fixture.titles() == ["A", "B"])
    }

    func undoTakesBackTheBatch() throws {
        // Given A, B, C, D as stored
        let fixture = try FacadeFixture(factory)
        let albums = try fixture.add("A", "B", "C", "D")
        let before = try fixture.storedAlbums()
        // When a batch changes, moves, deletes and adds, and then is undone once
        let outcome = try fixture.facade.apply([
            .update(.id(albums[0].id.rawValue), AlbumPatch(title: .set("A2"), year: .set(1980)), ifMatch: nil),
            .move(.id(albums[3].id.rawValue), to: 0),
            .delete(.id(albums[1].id.rawValue), ifMatch: nil),
            .add(input("E"), index: 1),
            .delete(.index(0), ifMatch: nil),
        ], atomic: true)
        guard case .committed(_, let version) = outcome else { Issue.record("rolled back: \(outcome)"); return }
        let events = fixture.sink.events.count
        let result = try fixture.facade.undo()
        // Then the library is exactly as before (fields, timestamps, order), in one undo step
        #expect(try fixture.storedAlbums() == before)
        #expect(result.command.summary == "take back a batch of 5 changes" && result.album == nil)
        // With one version and one event per inverse, newest first
        #expect(result.version == version + 5)
        #expect(fixture.sink.events.dropFirst(events).map(\.version) == Array(version + 1...version + 5))
        #expect(try fixture.facade.undoStatus() == UndoStatus(depth: 4, next: "remove the added album 'D'"))
    }

    func undoThatNoLongerFitsIsDropped() throws {
        // Given A, B and a batch that moved B to the front and retitled A
        let fixture = try FacadeFixture(factory)
        let ab = try fixture.add("A", "B")
        _ = try fixture.facade.apply([
            .move(.id(ab[1].id.rawValue), to: 0),
            .update(.id(ab[0].id.rawValue), AlbumPatch(title: .set("A2")), ifMatch: nil),
        ], atomic: true)
        // And A deleted behind the facade's back (no undo command of its own)
        try fixture.store.write(.default) { writer in
            try writer.delete(id: ab[0].id)
            _ = try writer.bumpVersion()
        }
        let before = try fixture.storedAlbums()
        // When the batch is undone
        let error = libraryError { _ = try fixture.facade.undo() }
        // Then nothing changes (the move back is not half done), and the batch is dropped
        guard case .undoConflict? = error else { Issue.record("expected undoConflict, got \(String(describing: error))"); return }
        #expect(try fixture.storedAlbums() == before)
        #expect(try fixture.facade.undoStatus() == UndoStatus(depth: 2, next: "remove the added album 'B'"))
    }

    func budgetRollsBack() throws {
        // Given A
        let fixture = try FacadeFixture(factory)
        try fixture.add("A")
        // When a batch of 64 adds has no time at all in the writer
        let steps = (0..<64).map { BatchStep.add(input("X\($0)"), index: nil) }
        let error = libraryError { _ = try fixture.facade.apply(steps, atomic: false, budget: .zero) }
        // Then it is refused as too slow, and nothing is applied
        guard case .writeTimedOut? = error else { Issue.record("expected writeTimedOut, got \(String(describing: error))"); return }
        #expect(try fixture.titles() == ["A"])
        #expect(try fixture.facade.version() == 1)
    }

    func codable() throws {
        let album = AlbumID("01HZY8Q6V9T3X2K7M4N5P6R7S8")!
        let command = UndoCommand.batch([.remove(id: album, title: "A"), .move(id: album, title: "A", index: 2)])
        let data = try JSONEncoder().encode(command)
        #expect(try JSONDecoder().decode(UndoCommand.self, from: data) == command)
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        #expect(object?["kind"] as? String == "batch" && (object?["commands"] as? [Any])?.count == 2)
    }
}

extension FacadeRules {
    static let batchRules: [ContractCheck] = [
        ContractCheck("a batch applies in order: one version, event and change per operation, one undo command") { try BatchRules(factory: $0).appliesInOrder() },
        ContractCheck("an atomic batch with a refused operation applies nothing and names the operation") { try BatchRules(factory: $0).atomicRefusalAppliesNothing() },
        ContractCheck("a batch that is not atomic applies what its rules allow and reports the rest") { try BatchRules(factory: $0).notAtomicAppliesTheRest() },
        ContractCheck("one undo takes back a whole batch, exactly") { try BatchRules(factory: $0).undoTakesBackTheBatch() },
        ContractCheck("the undo of a batch that no longer fits changes nothing and is dropped") { try BatchRules(factory: $0).undoThatNoLongerFitsIsDropped() },
        ContractCheck("a batch past its time in the writer is rolled back") { try BatchRules(factory: $0).budgetRollsBack() },
        ContractCheck("a batch's undo command survives a JSON round trip") { try BatchRules(factory: $0).codable() },
    ]
}
