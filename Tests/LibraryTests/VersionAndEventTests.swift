import AlbumStoreContract
import TestThreads
import Testing
@testable import Library

@Suite("Versions and events", .ownThreads)
struct VersionAndEventTests {
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
