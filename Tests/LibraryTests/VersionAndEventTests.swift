import Testing
@testable import Library

@Suite("Versions and events")
struct VersionAndEventTests {
    @Test("every mutation bumps the version exactly once; no-ops and reads do not")
    func versionBumps() throws {
        let fixture = try Fixture()
        #expect(try fixture.facade.version() == 0)
        let a = try fixture.facade.add(input("A")).album
        #expect(try fixture.facade.version() == 1)
        _ = try fixture.facade.add(input("B"))
        #expect(try fixture.facade.version() == 2)
        _ = try fixture.facade.update(id: a.id, patch: AlbumPatch(year: .set(2000)))
        #expect(try fixture.facade.version() == 3)
        _ = try fixture.facade.move(id: a.id, to: 1)
        #expect(try fixture.facade.version() == 4)
        try fixture.facade.delete(id: a.id)
        #expect(try fixture.facade.version() == 5)
        try fixture.facade.undo()
        #expect(try fixture.facade.version() == 6)
        // No-ops: same-index move, patch that changes nothing, state, reads
        _ = try fixture.facade.move(id: a.id, to: 1)
        _ = try fixture.facade.update(id: a.id, patch: AlbumPatch(year: .set(2000)))
        try fixture.facade.setState(index: 0)
        _ = try fixture.facade.page(PageRequest())
        #expect(try fixture.facade.version() == 6)
        #expect(try fixture.facade.undoStatus().depth == 4)
    }

    @Test("events are published after commit, with the new version")
    func eventsAfterCommit() throws {
        let fixture = try Fixture()
        let a = try fixture.facade.add(input("A"), client: "phone").album
        try fixture.facade.delete(id: a.id)
        #expect(fixture.sink.events == [
            .albumAdded(id: a.id, index: 0, version: 1),
            .stateChanged(client: "phone", index: 0, albumID: a.id, version: 1),
            .albumDeleted(id: a.id, index: 0, version: 2),
        ])
        #expect(fixture.sink.events.map(\.name) == ["album.added", "state.changed", "album.deleted"])
    }

    @Test("nothing is published or changed when the transaction fails")
    func noEventsOnFailure() throws {
        // Given a seeded library and a store whose next commit fails
        let fixture = try Fixture(seeded: true)
        let before = fixture.store.data()
        let eventsBefore = fixture.sink.events.count
        fixture.store.failNextCommit()
        // When a delete runs
        let error = libraryError { _ = try fixture.facade.delete(at: 0) }
        // Then it is a storage error, the data is unchanged and no event went out
        guard case .storage? = error else {
            Issue.record("expected storage error, got \(String(describing: error))")
            return
        }
        #expect(fixture.store.data().albums == before.albums)
        #expect(fixture.store.data().version == before.version)
        #expect(fixture.store.data().undo.isEmpty)
        #expect(fixture.sink.events.count == eventsBefore)
        // And failures inside the facade's own checks publish nothing either
        #expect(throws: LibraryError.indexOutOfRange(index: 9, count: 5)) { try fixture.facade.delete(at: 9) }
        #expect(fixture.sink.events.count == eventsBefore)
    }

    @Test("every mutation is one write transaction")
    func oneTransaction() throws {
        let fixture = try Fixture(seeded: true)
        let writes = fixture.store.writeCount
        try fixture.facade.delete(at: 0)
        try fixture.facade.undo()
        _ = try fixture.facade.add(input("X"), at: 0)
        #expect(fixture.store.writeCount == writes + 3)
    }
}
