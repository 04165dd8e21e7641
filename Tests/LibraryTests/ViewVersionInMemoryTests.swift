import AlbumStoreContract
import Foundation
import TestThreads
import Testing
@testable import BlueLibraryAPI
@testable import Library

@Suite("A view's version from memory only", .ownThreads)
struct ViewVersionInMemoryTests {
    @Test("nil until the definitions and every source's facade are known; then the same as viewVersion")
    func knownOnlyOnceLoaded() throws {
        let store = InMemoryAlbumStore()
        let first = Libraries(store: store, clock: { Date() }, ids: .random(clock: { Date() }))
        _ = try first.create(id: LibraryID(rawValue: "jazz"), name: "Jazz")
        let view = ViewID(rawValue: "all")
        _ = try first.createView(id: view, sources: [.default, LibraryID(rawValue: "jazz")])

        // A new registry on the same store: nothing is in memory yet.
        let libraries = Libraries(store: store, clock: { Date() }, ids: .random(clock: { Date() }))
        #expect(libraries.viewVersionInMemory(view) == nil, "the definitions are not loaded")
        let read = try libraries.viewVersion(view)
        #expect(libraries.viewVersionInMemory(view) == read)

        _ = try libraries.facade(LibraryID(rawValue: "jazz")).add(try AlbumInput(title: "T", artist: "A"))
        let moved = try #require(libraries.viewVersionInMemory(view))
        #expect(moved.versions[1] == read.versions[1] + 1, "a commit in a source is seen without a read")
        #expect(libraries.viewVersionInMemory(ViewID(rawValue: "nope")) == nil)

        libraries.viewCache.forget()
        #expect(libraries.viewVersionInMemory(view) == nil, "forgotten definitions need a read again")
    }
}
