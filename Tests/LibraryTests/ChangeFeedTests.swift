import Foundation
import AlbumStoreContract
import TestThreads
import Testing
@testable import Library

@Suite("Change feed", .ownThreads)
struct ChangeFeedTests {
    @Test("no-ops and failed commits record nothing")
    func nothingOnFailure() throws {
        let fixture = try Fixture()
        let a = try fixture.add("A", "B")[0]
        _ = try fixture.facade.move(id: a.id, to: 0)
        fixture.store.failNextCommit()
        #expect(throws: LibraryError.self) { try fixture.facade.delete(id: a.id) }
        #expect(fixture.store.data().changes.map(\.version) == [1, 2])
    }

    @Test("retention: pruned only when older than the age AND beyond the count; since older is expired")
    func retention() throws {
        let store = InMemoryAlbumStore()
        let clock = ManualDateClock()
        let facade = LibraryFacade(
            store: store, clock: { clock.now }, ids: .random(clock: { clock.now }),
            changeRetention: ChangeRetention(age: .seconds(60), count: 3, prunePerWrite: 2))
        for index in 0..<6 { _ = try facade.add(input("A\(index)")) }
        // All young: nothing pruned although there are more than 3.
        #expect(store.data().changes.count == 6)
        clock.advance(milliseconds: 61_000)
        _ = try facade.add(input("late")) // version 7: at most 2 pruned per write
        #expect(store.data().changes.map(\.version) == [3, 4, 5, 6, 7])
        _ = try facade.add(input("later")) // version 8: two more of the old ones beyond the last 3
        #expect(store.data().changes.map(\.version) == [5, 6, 7, 8])
        _ = try facade.add(input("latest"))
        // 5 is old and beyond the last 3 (7, 8, 9); 6 is old and beyond too.
        #expect(store.data().changes.map(\.version) == [7, 8, 9])
        #expect(throws: LibraryError.changesExpired(since: 5, oldest: 6, current: 9)) {
            try facade.changes(since: 5, limit: 10)
        }
        #expect(try facade.changes(since: 6, limit: 10).changes.map(\.version) == [7, 8, 9])
        // Newer than the library: its own error (the client's mistake, nothing to reload).
        #expect(throws: LibraryError.versionAhead(since: 10, current: 9)) { try facade.changes(since: 10, limit: 10) }
    }
}
