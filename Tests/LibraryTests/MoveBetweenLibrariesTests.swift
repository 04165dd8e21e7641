import AlbumStoreContract
import Library
import TestThreads
import Testing

/// Moves between libraries where the store must be looked into (a failed commit, transaction
/// counts): the in-memory store only. The rules themselves are `FacadeRules` (both stores).
@Suite("Moves between libraries: commits", .ownThreads)
struct MoveBetweenLibrariesTests {
    let jazz = LibraryID(rawValue: "jazz")

    /// A registry over an in-memory store, with default holding A, B and jazz holding X.
    func fixture() throws -> (RegistryFixture, InMemoryAlbumStore, [Album]) {
        let fixture = try RegistryFixture(.inMemory, libraries: ["jazz"])
        let store = try #require(fixture.store as? InMemoryAlbumStore)
        let added = try fixture.add("A", "B", to: .default)
        try fixture.add("X", to: jazz)
        return (fixture, store, added)
    }

    @Test("a move is one write transaction over both libraries")
    func oneTransaction() throws {
        let (fixture, store, added) = try fixture()
        let writes = store.writeCount
        _ = try fixture.libraries.move(added[0].id, from: .default, to: jazz, index: 0)
        #expect(store.writeCount == writes + 1)
    }

    @Test("a move whose commit fails changes nothing, publishes nothing and leaves both memos right")
    func failedMove() throws {
        let (fixture, store, added) = try fixture()
        let (source, target) = (try fixture.facade(.default), try fixture.facade(jazz))
        let versions = (try source.currentVersion(), try target.currentVersion())
        let events = (fixture.sink(.default).events, fixture.sink(jazz).events)
        let data = (store.data(.default), store.data(jazz))
        store.failNextCommit()
        guard case .storage? = libraryError({ _ = try fixture.libraries.move(added[0].id, from: .default, to: jazz, index: 0) })
        else {
            Issue.record("a failed commit is a storage error")
            return
        }
        #expect(store.data(.default).albums == data.0.albums && store.data(jazz).albums == data.1.albums)
        #expect(store.data(.default).undo == data.0.undo && store.data(.default).changes == data.0.changes)
        #expect(store.data(jazz).changes == data.1.changes)
        #expect(fixture.sink(.default).events == events.0 && fixture.sink(jazz).events == events.1)
        #expect(try (source.currentVersion(), target.currentVersion()) == versions)
        #expect(try (source.version(), target.version()) == versions)
    }
}
