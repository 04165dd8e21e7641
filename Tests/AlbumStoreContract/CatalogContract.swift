import Essentials
import Foundation
import Library
import Synchronization
import Testing

/// The contract for several libraries and views: the catalog calls, reads and writes over
/// several libraries, global album ids, deleted and re-created libraries, the change feed's
/// move columns and the view definitions.
extension AlbumStoreContract {
    static let jazz = LibraryID(rawValue: "jazz")
    static let blues = LibraryID(rawValue: "blues")

    static func catalog(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        #expect(try store.libraries() == [LibraryRecord(id: .default, name: "default", albumCount: 0, version: 0)])
        #expect(try store.createLibrary(jazz, name: "Jazz") == LibraryRecord(id: jazz, name: "Jazz", albumCount: 0, version: 0))
        _ = try store.createLibrary(LibraryID(rawValue: "a-first"), name: "First ☃")
        #expect(try store.libraries().map(\.id.rawValue) == ["a-first", "default", "jazz"], "ordered by id")
        expectConflict { _ = try store.createLibrary(jazz, name: "Again") }
        expectConflict { _ = try store.createLibrary(.default, name: "Again") }
        expectConflict { try store.deleteLibrary(.default) }

        try store.write(jazz) { writer throws in
            try writer.insert(album(1), at: 0)
            try writer.insert(album(2), at: 1)
            _ = try writer.bumpVersion()
        }
        #expect(try store.renameLibrary(jazz, name: "Cool Jazz") == LibraryRecord(id: jazz, name: "Cool Jazz", albumCount: 2, version: 1))
        #expect(try store.libraries().first { $0.id == jazz } == LibraryRecord(id: jazz, name: "Cool Jazz", albumCount: 2, version: 1))
        #expect(try store.libraries().first { $0.id == .default }?.name == "default")

        let missing = LibraryID(rawValue: "missing")
        #expect(throws: LibraryError.libraryNotFound(missing)) { _ = try store.renameLibrary(missing, name: "x") }
        #expect(throws: LibraryError.libraryNotFound(missing)) { try store.deleteLibrary(missing) }
        #expect(throws: LibraryError.libraryNotFound(missing)) { try store.read(missing) { try $0.count() } }
        #expect(throws: LibraryError.libraryNotFound(missing)) { try store.write(missing) { try $0.bumpVersion() } }
        #expect(throws: LibraryError.libraryNotFound(missing)) { try store.read([.default, missing]) { $0.count } }
        #expect(throws: LibraryError.libraryNotFound(missing)) {
            try store.write([jazz, missing]) { writers in _ = try writers[0].bumpVersion() }
        }
        try store.deleteLibrary(jazz)
        #expect(try store.libraries().map(\.id.rawValue) == ["a-first", "default"])
        #expect(throws: LibraryError.libraryNotFound(jazz)) { try store.read(jazz) { try $0.count() } }
        #expect(throws: LibraryError.libraryNotFound(jazz)) { try store.deleteLibrary(jazz) }
        #expect(try store.read(.default) { try $0.version() } == 0, "default untouched")
    }

    static func recreatedLibrary(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        _ = try store.createLibrary(jazz, name: "Jazz")
        try store.write(jazz) { writer throws in
            for n in 1...3 { try writer.insert(album(UInt64(n)), at: n - 1) }
            for _ in 1...3 { _ = try writer.bumpVersion() }
            try writer.pushUndo(.remove(id: album(1).id, title: "Album 1"), limit: 10)
            try writer.saveState(SavedState(client: "phone", currentAlbumIndex: 2, albumID: album(3).id, updatedAt: nil))
            try writer.recordChange(change(3, .added, album(3).id, 2))
        }
        try store.deleteLibrary(jazz)
        let again = try store.createLibrary(jazz, name: "Jazz again")
        #expect(again.name == "Jazz again")
        #expect(again.albumCount == 0)
        #expect(again.version > 3, "versions never repeat for an id: an old ETag must not match the new library")
        try store.read(jazz) { reader throws in
            #expect(try reader.version() == again.version)
            #expect(try reader.count() == 0)
            #expect(try reader.album(id: album(1).id) == nil)
            #expect(try reader.index(of: album(1).id) == nil)
            #expect(try reader.albums(matching: .all, sort: AlbumSort(.title), from: .start, limit: 10) == [])
            #expect(try reader.undoDepth() == 0)
            #expect(try reader.states().isEmpty)
            #expect(try reader.changes(after: 0, limit: 10).isEmpty)
            #expect(try reader.oldestRetainedChange() == nil)
            #expect(try reader.library(of: album(1).id) == nil)
        }
        #expect(try store.write(jazz) { try $0.bumpVersion() } == again.version + 1)
        // The freed ids can be used again, and the new library orders and pages like any other.
        try store.write(jazz) { writer throws in
            for n in 1...40 { try writer.insert(album(UInt64(n)), at: (n * 7 + 3) % n) }
        }
        let expected = try store.read(jazz) { try $0.albums(offset: 0, limit: 100) }
        #expect(expected.count == 40)
        try store.write(jazz) { writer throws in try writer.move(id: expected[0].id, to: 39) }
        try expectOrder(store, in: jazz, Array(expected.dropFirst()) + [expected[0]])
        // Deleted twice: still increasing.
        try store.deleteLibrary(jazz)
        #expect(try store.createLibrary(jazz, name: "Jazz").version > again.version + 1)
    }

    static func deletedLibrary(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        _ = try store.createLibrary(jazz, name: "Jazz")
        _ = try store.createLibrary(blues, name: "Blues")
        let kept = (1...3).map { album(UInt64($0)) }
        let doomed = (100..<400).map { album(UInt64($0)) }
        let bluesAlbums = (500..<520).map { album(UInt64($0)) }
        for (library, albums) in [(LibraryID.default, kept), (jazz, doomed), (blues, bluesAlbums)] {
            try store.write(library) { writer throws in
                for (index, album) in albums.enumerated() { try writer.insert(album, at: index) }
                let version = try writer.bumpVersion()
                try writer.pushUndo(.remove(id: albums[0].id, title: albums[0].title), limit: 10)
                try writer.saveState(SavedState(client: "phone", currentAlbumIndex: 1, albumID: albums[1].id, updatedAt: nil))
                try writer.recordChange(change(version, .added, albums[0].id, 0))
            }
        }
        // Only if empty: refused inside the delete, nothing is removed.
        expectConflict { try store.deleteLibrary(jazz, onlyIfEmpty: true) }
        try expectOrder(store, in: jazz, doomed)
        try store.deleteLibrary(jazz)
        #expect(try store.libraries().map(\.id) == [blues, .default])
        for (library, albums) in [(LibraryID.default, kept), (blues, bluesAlbums)] {
            try expectOrder(store, in: library, albums)
            try store.read(library) { reader throws in
                #expect(try reader.version() == 1)
                #expect(try reader.undoDepth() == 1)
                #expect(try reader.states().map(\.client) == ["phone"])
                #expect(try reader.changes(after: 0, limit: 10).map(\.id) == [albums[0].id])
                #expect(try reader.library(of: doomed[5].id) == nil)
                #expect(try reader.albums(matching: .all, sort: AlbumSort(.artist), from: .start, limit: 1000)?.count == albums.count)
            }
        }
        // The deleted library's ids are free; the others keep working.
        try store.write(.default) { writer throws in
            try writer.insert(doomed[0], at: 1)
            try writer.delete(id: kept[0].id)
        }
        try expectOrder(store, in: .default, [doomed[0], kept[1], kept[2]])
        try store.write(blues) { writer throws in try writer.insert(doomed[1], at: 20) }
        try expectOrder(store, in: blues, bluesAlbums + [doomed[1]])
    }

    static func globalIDs(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        _ = try store.createLibrary(jazz, name: "Jazz")
        try store.write(.default) { writer throws in try writer.insert(album(1), at: 0) }
        #expect(throws: (any Error).self) { try store.write(jazz) { writer throws in try writer.insert(album(1), at: 0) } }
        try store.read(jazz) { reader throws in
            #expect(try reader.count() == 0, "the refused insert left nothing")
            #expect(try reader.library(of: album(1).id) == .default, "a lookup from any library is global")
            #expect(try reader.library(of: album(9).id) == nil)
            #expect(try reader.album(id: album(1).id) == nil, "album(id:) stays within the library")
        }
        // A move between libraries in one transaction: each writer sees where the album is now.
        try store.write([.default, jazz]) { writers throws in
            let album = try #require(try writers[0].album(id: album(1).id))
            try writers[0].delete(id: album.id)
            #expect(try writers[1].library(of: album.id) == nil)
            try writers[1].insert(album, at: 0)
            #expect(try writers[0].library(of: album.id) == jazz)
            #expect(try writers[1].library(of: album.id) == jazz)
        }
        #expect(try store.read(.default) { try $0.library(of: album(1).id) } == jazz)
        #expect(try store.read(jazz) { try $0.album(at: 0) } == album(1))
        // A duplicate across libraries inside one transaction fails it as a whole.
        #expect(throws: (any Error).self) {
            try store.write([.default, jazz]) { writers throws in
                try writers[0].insert(album(2), at: 0)
                try writers[1].insert(album(2), at: 0)
            }
        }
        #expect(try store.read(.default) { try $0.count() } == 0)
        #expect(try store.read(jazz) { try $0.count() } == 1)
    }

    static func severalLibraries(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        _ = try store.createLibrary(jazz, name: "Jazz")
        _ = try store.createLibrary(blues, name: "Blues")
        let versions = try store.write([jazz, blues]) { writers throws in
            try writers[0].insert(album(1), at: 0)
            try writers[1].insert(album(2), at: 0)
            try writers[1].insert(album(3), at: 1)
            return [try writers[0].bumpVersion(), try writers[1].bumpVersion(), try writers[1].bumpVersion()]
        }
        #expect(versions == [1, 1, 2])
        try store.read([blues, .default, jazz]) { readers throws in
            #expect(readers.count == 3)
            #expect(try readers.map { try $0.count() } == [2, 0, 1], "readers come in the order asked")
            #expect(try readers.map { try $0.version() } == [2, 0, 1])
            #expect(try readers[0].albums(offset: 0, limit: 5) == [album(2), album(3)])
        }
        struct Marker: Error, Equatable { let token: Int }
        #expect(throws: Marker(token: 7)) {
            try store.write([blues, jazz]) { writers throws in
                try writers[0].delete(id: album(2).id)
                try writers[1].insert(album(2), at: 1)
                _ = try writers[0].bumpVersion()
                _ = try writers[1].bumpVersion()
                try writers[1].pushUndo(.remove(id: album(2).id, title: "x"), limit: 5)
                try writers[0].recordChange(change(3, .deleted, album(2).id, 0))
                throw Marker(token: 7)
            }
        }
        try expectOrder(store, in: jazz, [album(1)])
        try expectOrder(store, in: blues, [album(2), album(3)])
        try store.read([jazz, blues]) { readers throws in
            #expect(try readers.map { try $0.version() } == [1, 2])
            #expect(try readers[0].undoDepth() == 0)
            #expect(try readers[1].changes(after: 0, limit: 5).isEmpty)
        }
        // Emptying one library while another in the same transaction has new albums keeps those.
        try store.write([jazz, blues]) { writers throws in
            try writers[0].insert(album(4), at: 1)
            try writers[1].deleteAllAlbums()
            try writers[1].insert(album(5), at: 0)
        }
        try expectOrder(store, in: jazz, [album(1), album(4)])
        try expectOrder(store, in: blues, [album(5)])
        try store.write([blues, jazz]) { writers throws in
            try writers[0].deleteAllAlbums()
            try writers[1].deleteAllAlbums()
            try writers[0].insert(album(2), at: 0)
        }
        try expectOrder(store, in: jazz, [])
        try expectOrder(store, in: blues, [album(2)])
        #expect(try store.libraries().map(\.albumCount) == [1, 0, 0], "counts kept per library (blues, default, jazz)")
        // One library in a list is the same as the single-library calls.
        #expect(try store.write([.default]) { try $0[0].bumpVersion() } == 1)
        #expect(try store.read(.default) { try $0.version() } == 1)
    }

    static func changeFeedMoves(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        _ = try store.createLibrary(jazz, name: "Jazz")
        let at = { (version: Int64) in Timestamp.date(milliseconds: 1_700_000_000_000 + version * 1000) }
        let recorded = [
            LibraryChange(version: 1, kind: .moved, id: album(1).id, index: 3, fromIndex: 7, recordedAt: at(1)),
            LibraryChange(version: 2, kind: .added, id: album(2).id, index: 0, peer: jazz, recordedAt: at(2)),
            LibraryChange(version: 3, kind: .deleted, id: album(2).id, index: 4, peer: jazz, recordedAt: at(3)),
            LibraryChange(version: 4, kind: .moved, id: album(1).id, index: 0, fromIndex: 0, recordedAt: at(4)),
            LibraryChange(version: 5, kind: .added, id: album(3).id, index: 1, recordedAt: at(5)),
            LibraryChange(version: 6, kind: .replaced, id: nil, index: nil, recordedAt: at(6)),
        ]
        try store.write(.default) { writer throws in
            for change in recorded { try writer.recordChange(change) }
        }
        try store.read(.default) { reader throws in
            #expect(try reader.changes(after: 0, limit: 10) == recorded)
            #expect(try reader.oldestRetainedChange() == recorded[0])
        }
    }

    static func viewDefinitions(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        #expect(try store.views().isEmpty)
        let everything = ViewDefinition(
            id: ViewID(rawValue: "everything"), name: "Everything ☃", sources: [.default, jazz, blues],
            filter: AlbumFilter(text: "a%_b", artist: "Miles", genre: "Jazz", yearFrom: 1950, yearTo: 1969), revision: 1)
        let alpha = ViewDefinition(id: ViewID(rawValue: "alpha"), name: "alpha", sources: [jazz])
        try store.saveView(everything)
        try store.saveView(alpha)
        #expect(try store.views() == [alpha, everything], "ordered by id, stored whole")
        var changed = everything
        changed.name = "Most things"
        changed.sources = [blues, .default]
        changed.filter = AlbumFilter(yearTo: 2000)
        changed.revision = 2
        try store.saveView(changed)
        #expect(try store.views() == [alpha, changed])
        #expect(try store.deleteView(alpha.id))
        #expect(try store.deleteView(alpha.id) == false)
        #expect(try store.views() == [changed])
        // Views name libraries without owning them: a library's deletion leaves them as they are.
        _ = try store.createLibrary(jazz, name: "Jazz")
        try store.deleteLibrary(jazz)
        #expect(try store.views() == [changed])
    }

    static func viewCompareAndSet(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        let id = ViewID(rawValue: "mine")
        let first = ViewDefinition(id: id, name: "First", sources: [.default], revision: 7)
        #expect(try store.saveView(first, expecting: nil), "a new id is created")
        var other = first
        other.name = "Other"
        #expect(try store.saveView(other, expecting: nil) == false, "a second create of the id stores nothing")
        #expect(try store.views() == [first])

        var second = first
        second.name = "Second"
        second.revision = 8
        #expect(try store.saveView(second, expecting: 6) == false, "a wrong revision stores nothing")
        #expect(try store.views() == [first])
        #expect(try store.saveView(second, expecting: 7))
        #expect(try store.views() == [second])
        var late = first
        late.name = "Late"
        late.revision = 8
        #expect(try store.saveView(late, expecting: 7) == false, "a change from the old revision is refused")
        #expect(try store.views() == [second], "the first change stays, whole")
        #expect(try store.deleteView(id))
        #expect(try store.saveView(late, expecting: 8) == false, "a deleted view is not brought back by a change")
        #expect(try store.views().isEmpty)

        // Several writers at once (threads here; instances on PostgreSQL race the same way):
        // one create per id wins, and of the changes from one revision exactly one is stored.
        let racers = 6
        let created = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: racers) { n in
            let view = ViewDefinition(id: id, name: "Create \(n)", sources: [.default], revision: 100)
            if (try? store.saveView(view, expecting: nil)) == true { created.withLock { $0.append(n) } }
        }
        #expect(created.withLock { $0.count } == 1, "one of \(racers) concurrent creates of one id wins")
        let winner = try #require(try store.views().first)
        #expect(winner.name == "Create \(created.withLock { $0.first ?? -1 })")
        let changed = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: racers) { n in
            var view = winner
            view.name = "Change \(n)"
            view.revision = winner.revision + 1
            if (try? store.saveView(view, expecting: winner.revision)) == true { changed.withLock { $0.append(n) } }
        }
        #expect(changed.withLock { $0.count } == 1, "one of \(racers) concurrent changes of one revision wins")
        let stored = try #require(try store.views().first)
        #expect(stored.revision == winner.revision + 1)
        #expect(stored.name == "Change \(changed.withLock { $0.first ?? -1 })", "the definition of the change that won")
    }

    // MARK: - Helpers

    /// Runs `body` and expects `LibraryError.conflict`.
    static func expectConflict(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            try body()
            Issue.record("expected a conflict", sourceLocation: sourceLocation)
        } catch LibraryError.conflict {
        } catch {
            Issue.record("expected a conflict, got \(error)", sourceLocation: sourceLocation)
        }
    }
}
