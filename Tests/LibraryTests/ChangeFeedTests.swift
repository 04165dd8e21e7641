import Foundation
import Testing
@testable import Library

@Suite("Change feed")
struct ChangeFeedTests {
    @Test("each mutation records one change in its own transaction, in version order")
    func everyKind() throws {
        let fixture = try Fixture(seeded: true)
        let first = try fixture.facade.album(at: 0).album
        let added = try fixture.facade.add(input("New"), at: 1).album
        _ = try fixture.facade.update(id: added.id, patch: AlbumPatch(year: .set(1999)))
        _ = try fixture.facade.move(id: added.id, to: 3)
        try fixture.facade.delete(id: first.id)
        try fixture.facade.undo() // re-inserts `first` at 0
        try fixture.facade.setState(index: 2) // no version bump, no change
        let page = try fixture.facade.changes(since: 0, limit: 100)
        #expect(page.changes.map(\.kind) == [.replaced, .added, .updated, .moved, .deleted, .added])
        #expect(page.changes.map(\.version) == Array(1...6))
        #expect(page.changes[0].id == nil && page.changes[0].index == nil)
        #expect(page.changes[1].id == added.id && page.changes[1].index == 1)
        #expect(page.changes[3].index == 3)
        #expect(page.changes[4].id == first.id && page.changes[4].index == 0)
        #expect(page.changes[5].id == first.id && page.changes[5].index == 0)
        #expect(page.next == 6 && !page.more)
        #expect(try fixture.facade.version() == 6)
    }

    @Test("pages follow next; since == version is an empty page")
    func paging() throws {
        let fixture = try Fixture()
        try fixture.add("A", "B", "C", "D", "E")
        let first = try fixture.facade.changes(since: 0, limit: 2)
        #expect(first.changes.map(\.version) == [1, 2] && first.next == 2 && first.more)
        let second = try fixture.facade.changes(since: first.next, limit: 2)
        #expect(second.changes.map(\.version) == [3, 4] && second.more)
        let last = try fixture.facade.changes(since: second.next, limit: 2)
        #expect(last.changes.map(\.version) == [5] && last.next == 5 && !last.more)
        let empty = try fixture.facade.changes(since: 5, limit: 2)
        #expect(empty.changes.isEmpty && empty.next == 5 && !empty.more)
    }

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
        let clock = ManualClock()
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
        #expect(throws: LibraryError.self) { try facade.changes(since: 10, limit: 10) }
    }

    @Test("a library whose history predates the feed answers only from its current version")
    func noHistory() throws {
        let fixture = try Fixture()
        #expect(try fixture.facade.changes(since: 0, limit: 10).changes.isEmpty)
        try fixture.add("A")
        #expect(try fixture.facade.changes(since: 0, limit: 10).changes.count == 1)
    }
}
