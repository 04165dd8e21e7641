@testable import BlueLibraryAPI
import Foundation
import Testing
import Library

struct ChangeFeedRules {
    let factory: AlbumStoreFactory

    func everyKind() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
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

    func paging() throws {
        let fixture = try FacadeFixture(factory)
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

    func noHistory() throws {
        let fixture = try FacadeFixture(factory)
        #expect(try fixture.facade.changes(since: 0, limit: 10).changes.isEmpty)
        try fixture.add("A")
        #expect(try fixture.facade.changes(since: 0, limit: 10).changes.count == 1)
    }
}

extension FacadeRules {
    static let changeFeedRules: [ContractCheck] = [
        ContractCheck("each mutation records one change in its own transaction, in version order") { try ChangeFeedRules(factory: $0).everyKind() },
        ContractCheck("pages follow next; since == version is an empty page") { try ChangeFeedRules(factory: $0).paging() },
        ContractCheck("a library whose history predates the feed answers only from its current version") { try ChangeFeedRules(factory: $0).noHistory() },
    ]
}
