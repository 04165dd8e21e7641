import AlbumStoreContract
import Foundation
import TestThreads
import Testing
@testable import Library

/// Pages are one read transaction each, for libraries and views (the store's own counters).
@Suite(.ownThreads) struct WalkReadTests {
    @Test func everyPageIsOneReadTransaction() throws {
        let store = InMemoryAlbumStore()
        let clock = ManualDateClock()
        let libraries = Libraries(store: store, clock: { clock.now }, ids: .random(clock: { clock.now }))
        let jazz = LibraryID(rawValue: "jazz")
        _ = try libraries.create(id: jazz)
        for n in 0..<12 { _ = try libraries.defaultLibrary.add(input("D \(n)")) }
        for n in 0..<5 { _ = try libraries.facade(jazz).add(input("J \(n)")) }
        let view = try libraries.createView(id: ViewID(rawValue: "both"), sources: [.default, jazz])
        _ = try libraries.views()

        var reads = store.readCount
        func expectOneRead(_ what: String) {
            #expect(store.readCount == reads + 1, "\(what)")
            reads = store.readCount
        }
        let first = try libraries.defaultLibrary.page(PageRequest(limit: 5))
        expectOneRead("a library's first page")
        _ = try libraries.defaultLibrary.move(id: first.items[0].album.id, to: 11)
        reads = store.readCount
        _ = try libraries.defaultLibrary.page(PageRequest(start: .cursor(try #require(first.next)), limit: 5))
        expectOneRead("a cursor page that replays a move")
        let viewFirst = try libraries.page(view: view.id, PageRequest(limit: 10))
        expectOneRead("a view's first page")
        _ = try libraries.move(viewFirst.items[1].album.id, from: .default, to: jazz, index: 0)
        reads = store.readCount
        let viewNext = try libraries.page(view: view.id, PageRequest(start: .cursor(try #require(viewFirst.next)), limit: 10))
        expectOneRead("a view's cursor page after a move between its libraries")
        #expect(viewNext.items.map(\.album.title) == ["D 11", "D 0", "J 0", "J 1", "J 2", "J 3", "J 4"],
                "D 2 (seen) moved to the front of jazz, ahead of the walk: skipped")
        _ = try libraries.viewVersion(view.id)
        #expect(store.readCount == reads, "a view's version is known without a read")
    }
}
