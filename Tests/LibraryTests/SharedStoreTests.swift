import AlbumStoreContract
import Foundation
import TestThreads
import Testing
@testable import BlueLibraryAPI
@testable import Library

/// Two instances on one database: two registries, each on its own `SharedStoreView` of one
/// in-memory store. What instance B commits must be what instance A answers with next,
/// although A's memory never hears of it.
@Suite("A shared store: nothing remembered is trusted", .ownThreads)
struct SharedStoreTests {
    let store = InMemoryAlbumStore()
    let viewA: SharedStoreView
    let a: Libraries
    let b: Libraries
    let jazz = LibraryID(rawValue: "jazz")

    init() {
        viewA = SharedStoreView(store)
        a = Libraries(store: viewA, clock: { Date() }, ids: .random(clock: { Date() }))
        b = Libraries(store: SharedStoreView(store), clock: { Date() }, ids: .random(clock: { Date() }))
    }

    @Test("currentVersion reads the store on every call; knownVersion is never set")
    func versionIsReadEachTime() throws {
        let facade = a.defaultLibrary
        #expect(try facade.currentVersion() == 0)
        _ = try facade.add(try AlbumInput(title: "A's", artist: "X"))
        #expect(facade.knownVersion() == nil, "a commit of its own is not remembered either")
        let reads = viewA.versionReads.count
        _ = try b.defaultLibrary.add(try AlbumInput(title: "B's", artist: "Y"))
        #expect(try facade.currentVersion() == 2, "B's commit is seen by A at once")
        #expect(viewA.versionReads.count == reads + 1, "one versions(of:) per call")
        #expect(try facade.page(PageRequest(limit: 10)).items.map(\.album.title) == ["A's", "B's"])
    }

    @Test("the same registry on an unshared store keeps its memo (the control)")
    func unsharedRemembers() throws {
        let mine = Libraries(store: store, clock: { Date() }, ids: .random(clock: { Date() }))
        let other = Libraries(store: store, clock: { Date() }, ids: .random(clock: { Date() }))
        #expect(try mine.defaultLibrary.currentVersion() == 0)
        _ = try other.defaultLibrary.add(try AlbumInput(title: "T", artist: "A"))
        #expect(try mine.defaultLibrary.currentVersion() == 0, "one process: the memo is trusted")
        #expect(mine.defaultLibrary.knownVersion() == 0)
    }

    @Test("a view's definition and versions changed by another instance are seen at once")
    func viewsAreReadEachTime() throws {
        _ = try a.create(id: jazz, name: "Jazz")
        let view = ViewID(rawValue: "all")
        _ = try a.createView(id: view, sources: [.default, jazz])
        let first = try a.viewVersion(view)
        #expect(a.viewVersionInMemory(view) == nil, "never answered from memory")

        _ = try b.facade(jazz).add(try AlbumInput(title: "T", artist: "A"))
        let added = try a.viewVersion(view)
        #expect(added.revision == first.revision)
        #expect(added.versions == [first.versions[0], first.versions[1] + 1])

        let updated = try b.updateView(view, sources: [jazz])
        #expect(try a.view(view).sources == [jazz], "B's definition, not A's memory")
        #expect(try a.viewVersion(view) == ViewVersion(revision: updated.revision, versions: [added.versions[1]]))
        #expect(try a.page(view: view, PageRequest(limit: 10)).items.map(\.album.title) == ["T"])

        try b.deleteView(view)
        #expect(throws: LibraryError.viewNotFound(view)) { try a.viewVersion(view) }
        #expect(try a.views().isEmpty)
    }

    @Test("a view changed by another instance between this one's read and save: both changes kept, revisions distinct")
    func concurrentViewChanges() throws {
        _ = try a.create(id: jazz, name: "Jazz")
        let view = ViewID(rawValue: "all")
        let created = try a.createView(id: view, name: "All", sources: [.default, jazz])
        let other = b
        viewA.beforeNextViewSave.set { _ = try? other.updateView(view, name: "Everything") }
        let mine = try a.updateView(view, filter: AlbumFilter(genre: "Jazz"))
        #expect(mine.name == "Everything", "B's change is not lost")
        #expect(mine.filter == AlbumFilter(genre: "Jazz"), "A's change applied on top of it")
        #expect(mine.revision == created.revision + 2, "two changes, two revisions")
        #expect(try b.view(view) == mine)

        // Created at once on two instances: one 201, one conflict; B's definition stays.
        let twice = ViewID(rawValue: "twice")
        viewA.beforeNextViewSave.set { _ = try? other.createView(id: twice, name: "B's", sources: [jazz]) }
        do {
            _ = try a.createView(id: twice, name: "A's", sources: [.default])
            Issue.record("A's create of an id B created meanwhile must be a conflict")
        } catch .conflict {
        } catch {
            Issue.record("expected a conflict, got \(error)")
        }
        #expect(try a.view(twice).name == "B's")
        #expect(try a.view(twice).sources == [jazz])
    }

    @Test("libraries created and deleted by another instance")
    func registryFollowsOtherInstances() throws {
        _ = try b.create(id: jazz, name: "Jazz")
        let facade = try a.facade(jazz)
        #expect(try facade.currentVersion() == 0)
        #expect(try a.list().map(\.id) == [.default, jazz])

        try b.delete(jazz)
        #expect(throws: LibraryError.libraryNotFound(jazz)) { try facade.currentVersion() }
        #expect(throws: LibraryError.libraryNotFound(jazz)) { try a.facade(jazz).add(try AlbumInput(title: "T", artist: "A")) }
        #expect(try a.list().map(\.id) == [.default])

        // Created again elsewhere: A's facade serves it, at the continued version.
        let again = try b.create(id: jazz)
        #expect(try a.facade(jazz).currentVersion() == again.version)
    }

    @Test("every versioned event comes back unchanged from its change feed entry")
    func eventsFromTheFeed() throws {
        let sink = RecordingEventSink()
        let libraries = Libraries(store: store, clock: { Date() }, ids: .random(clock: { Date() })) { _ in sink }
        _ = try libraries.create(id: jazz)
        let facade = libraries.defaultLibrary
        let first = try facade.add(try AlbumInput(title: "One", artist: "A")).album
        let second = try facade.add(try AlbumInput(title: "Two", artist: "A")).album
        _ = try facade.update(id: first.id, patch: try AlbumPatch.decode(json: Array(#"{"title":"Uno"}"#.utf8)))
        _ = try facade.move(id: second.id, to: 0)
        _ = try libraries.move(second.id, from: .default, to: jazz, index: nil)
        _ = try facade.delete(id: first.id)
        _ = try facade.setState(client: "c", index: 0)

        let versioned = sink.events.filter { if case .stateChanged = $0 { false } else { true } }
        let fromFeed = try facade.changes(since: 0, limit: 100).changes.compactMap(LibraryEvent.init)
            + (try libraries.facade(jazz).changes(since: 0, limit: 100).changes.compactMap(LibraryEvent.init))
        #expect(fromFeed.count == versioned.count)
        #expect(Set(fromFeed.map { "\($0)" }) == Set(versioned.map { "\($0)" }))
        #expect(versioned.contains { if case .albumMovedOut = $0 { true } else { false } })
        #expect(versioned.contains { if case .albumMovedIn = $0 { true } else { false } })
        #expect(versioned.contains { if case .albumMoved = $0 { true } else { false } })
    }
}
