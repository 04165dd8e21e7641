import Essentials
import Foundation
import HTTPTestSupport
import Library
import SQLite
@testable import Storage
import TestThreads
import Testing

/// What only SQLite has to get right about several libraries (the contract checks the rest on
/// both stores): migrating a v6 database, the row-id cache when another process deletes and
/// re-creates a library, and deleting a large library with set-wide statements.
@Suite("SQLite: catalog, migration v7, deleted libraries", .ownThreads)
struct CatalogStorageTests {
    /// A database at migration v6 holding `albums` (library name, album id) in order per
    /// library, one bucket each, with the library versions given, and one change per library.
    static func v6Database(_ path: String, albums: [(library: String, id: AlbumID)], versions: [String: Int64]) throws {
        let connection = try Connection(path: path)
        try Schema.migrator(first: 6).migrate(connection)
        let names = Array(Set(albums.map(\.library)).union(versions.keys)).sorted()
        for (offset, name) in names.enumerated() {
            let row = Int64(offset + 1)
            let held = albums.filter { $0.library == name }
            try connection.run(
                "INSERT INTO libraries (id, name, version, album_count) VALUES (?1, ?2, ?3, ?4)",
                [.integer(row), .text(name), .integer(versions[name] ?? 0), .integer(Int64(held.count))])
            guard !held.isEmpty else { continue }
            try connection.run(
                "INSERT INTO buckets (library, ord, id, size) VALUES (?1, 0, ?1, ?2)", [.integer(row), .integer(Int64(held.count))])
            for (position, album) in held.enumerated() {
                try connection.run("""
                    INSERT INTO albums (library, album_id, bucket, pos, title, artist, genre, created_at, updated_at)
                    VALUES (?1, ?2, ?1, ?3, 'T', 'A', 'Pop', 1700000000000, 1700000000000)
                    """, [.integer(row), .text(album.id.rawValue), .integer(Int64(position) * 1024)])
            }
            try connection.run(
                "INSERT INTO library_changes (library, version, kind, album_id, position, recorded_at) VALUES (?1, 1, 'added', ?2, 0, 1700000000000)",
                [.integer(row), .text(held[0].id.rawValue)])
        }
    }

    @Test func aV6DatabaseMigratesWithItsLibrariesAlbumsAndChanges() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("library.sqlite")
        try Self.v6Database(path, albums: [("default", Fixtures.id(1)), ("default", Fixtures.id(2)), ("other", Fixtures.id(3))],
                            versions: ["default": 5, "other": 2])
        let store = try SQLiteAlbumStore(path: path)
        #expect(try store.libraries() == [
            LibraryRecord(id: .default, name: "default", albumCount: 2, version: 5),
            LibraryRecord(id: LibraryID(rawValue: "other"), name: "other", albumCount: 1, version: 2),
        ])
        #expect(try store.read(.default) { try $0.albums(offset: 0, limit: 5).map(\.id) } == [Fixtures.id(1), Fixtures.id(2)])
        #expect(try store.read(.default) { try $0.library(of: Fixtures.id(3)) } == LibraryID(rawValue: "other"))
        let change = try store.read(LibraryID(rawValue: "other")) { try $0.changes(after: 0, limit: 5) }
        #expect(change == [LibraryChange(version: 1, kind: .added, id: Fixtures.id(3), index: 0,
                                         recordedAt: Timestamp.date(milliseconds: 1_700_000_000_000))])
        #expect(try store.views().isEmpty)
        _ = try store.checkConsistency(.default)
        // A v6 database that never wrote `default` gets it from v7.
        let empty = directory.file("empty.sqlite")
        try Self.v6Database(empty, albums: [], versions: [:])
        #expect(try SQLiteAlbumStore(path: empty).libraries() == [LibraryRecord(id: .default, name: "default", albumCount: 0, version: 0)])
    }

    @Test func aV6DatabaseWithAnIDInTwoLibrariesDoesNotMigrate() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("library.sqlite")
        try Self.v6Database(path, albums: [("default", Fixtures.id(1)), ("other", Fixtures.id(1))], versions: [:])
        #expect(throws: MigrationError.self) { _ = try SQLiteAlbumStore(path: path) }
        let connection = try Connection(path: path)
        #expect(try Migrator.appliedIdentifiers(in: connection) == Array(SQLiteAlbumStore.migrationIdentifiers.prefix(6)),
                "nothing of v7 stays")
        #expect(try connection.scalar("SELECT COUNT(*) FROM albums", as: Int.self) == 2)
    }

    /// A read over several libraries is one snapshot: a move between them committed while the
    /// body runs is not seen half-done (the album is in its old library in both readers).
    @Test func aReadOfSeveralLibrariesIsOneSnapshot() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 4)
        let jazz = LibraryID(rawValue: "jazz")
        _ = try store.createLibrary(jazz, name: "Jazz")
        try store.write(.default) { writer in
            for number in 1...5 as ClosedRange<UInt64> { try writer.insert(Fixtures.album(number), at: Int(number) - 1) }
        }
        let moved = Fixtures.album(3)
        try store.read([.default, jazz]) { readers throws in
            #expect(try readers[0].count() == 5)
            // Committed on the writer connection while this read is open.
            try store.write([.default, jazz]) { writers throws in
                try writers[0].delete(id: moved.id)
                try writers[1].insert(moved, at: 0)
                _ = try writers[0].bumpVersion()
                _ = try writers[1].bumpVersion()
            }
            #expect(try readers[1].count() == 0)
            #expect(try readers[1].version() == 0)
            #expect(try readers[1].library(of: moved.id) == .default)
            #expect(try readers[0].index(of: moved.id) == 2)
        }
        try store.read([.default, jazz]) { readers throws in
            #expect(try readers.map { try $0.count() } == [4, 1])
            #expect(try readers[0].library(of: moved.id) == jazz)
        }
    }

    /// A bulk import drops the album-id index with the sort indexes; an id another library
    /// holds is then found when the index is rebuilt: `.conflict` naming it, nothing changed.
    @Test func aBulkImportOfAnIDAnotherLibraryHoldsIsAConflict() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 64)
        let migrated = try BulkImportTests.indexSchema(store)
        let other = LibraryID(rawValue: "other")
        _ = try store.createLibrary(other, name: "Other")
        let imported = BulkImportTests.albums(BulkImport.threshold + 200, seed: 11)
        let taken = imported[BulkImport.threshold + 100]
        try store.write(other) { writer in try writer.insert(taken, at: 0) }
        try store.write(.default) { writer in try writer.insert(Fixtures.album(1), at: 0) }
        let rebuilds = store.orderingCounters.sortIndexRebuilds
        do {
            try store.write(.default) { writer in
                try writer.deleteAllAlbums()
                for (index, album) in imported.enumerated() { try writer.insert(album, at: index) }
                _ = try writer.bumpVersion()
            }
            Issue.record("the import was committed")
        } catch let LibraryError.conflict(message) {
            #expect(message.contains(taken.id.rawValue) && message.contains("\"other\""), "\(message)")
        }
        #expect(store.orderingCounters.sortIndexRebuilds == rebuilds + 1, "the indexes were dropped")
        #expect(try BulkImportTests.indexSchema(store) == migrated)
        #expect(try Fixtures.allAlbums(store) == [Fixtures.album(1)])
        #expect(try store.read(.default) { try $0.version() } == 0)
        #expect(try store.read(.default) { try $0.library(of: taken.id) } == other)
        // Without the taken id the same import goes through, and the index is back.
        try store.write(.default) { writer in
            try writer.deleteAllAlbums()
            for (index, album) in imported.filter({ $0.id != taken.id }).enumerated() { try writer.insert(album, at: index) }
        }
        #expect(try BulkImportTests.indexSchema(store) == migrated)
        #expect(try store.read(.default) { try $0.count() } == imported.count - 1)
        #expect(throws: StorageError.self) { try store.write(.default) { writer in try writer.insert(taken, at: 0) } }
    }

    /// Two stores on one file stand for two processes: each caches row ids; a delete and a
    /// re-create in one must be seen by the other.
    @Test func theRowCacheFollowsADeleteAndRecreateByAnotherProcess() throws {
        let directory = try TemporaryDirectory()
        let first = try Fixtures.store(directory, bucketSize: 4)
        let second = try Fixtures.store(directory, bucketSize: 4)
        let jazz = LibraryID(rawValue: "jazz")
        _ = try first.createLibrary(jazz, name: "Jazz")
        try first.write(jazz) { writer in
            for number in 1...9 as ClosedRange<UInt64> { try writer.insert(Fixtures.album(number), at: 0) }
            _ = try writer.bumpVersion()
        }
        #expect(try second.read(jazz) { try $0.count() } == 9, "the second store caches jazz's row")
        try first.deleteLibrary(jazz)
        #expect(throws: LibraryError.libraryNotFound(jazz)) { try second.read(jazz) { try $0.count() } }
        #expect(throws: LibraryError.libraryNotFound(jazz)) { try second.write(jazz) { try $0.bumpVersion() } }
        // Another library made in between must not take jazz's place in anyone's cache.
        _ = try first.createLibrary(LibraryID(rawValue: "blues"), name: "Blues")
        let again = try first.createLibrary(jazz, name: "Jazz")
        #expect(again.version == 2)
        try second.write(jazz) { writer in
            try writer.insert(Fixtures.album(1), at: 0)
            #expect(try writer.bumpVersion() == 3)
        }
        #expect(try Fixtures.allAlbums(first, jazz) == [Fixtures.album(1)])
        #expect(try first.read(LibraryID(rawValue: "blues")) { try $0.count() } == 0)
        _ = try first.checkConsistency(jazz)
    }

    /// A large library goes with set-wide statements, whether other libraries hold albums (rows
    /// deleted by library) or not (the table emptied wholesale), leaving the others consistent
    /// and the sort indexes as the migrations made them (they are rebuilt over what remains).
    @Test(arguments: [false, true])
    func aLargeLibraryIsDeletedWhole(othersHoldAlbums: Bool) throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 64)
        let migrated = try BulkImportTests.indexSchema(store)
        let big = LibraryID(rawValue: "big")
        _ = try store.createLibrary(big, name: "Big")
        let count = 20_000
        try store.write(big) { writer in
            for number in 1...count { try writer.insert(Fixtures.album(UInt64(number)), at: number - 1) }
            for number in 1...5 { try writer.saveState(SavedState(client: "c\(number)", currentAlbumIndex: number, albumID: nil, updatedAt: nil)) }
            try writer.pushUndo(.remove(id: Fixtures.id(1), title: "x"), limit: 10)
            try writer.recordChange(LibraryChange(version: 1, kind: .replaced, id: nil, index: nil, recordedAt: Date()))
            _ = try writer.bumpVersion()
        }
        let kept = (1...50).map { Fixtures.album(UInt64(100_000 + $0)) }
        if othersHoldAlbums {
            try store.write(.default) { writer in
                for (index, album) in kept.enumerated() { try writer.insert(album, at: index) }
            }
        }
        let rebuilds = store.orderingCounters.sortIndexRebuilds
        try store.deleteLibrary(big)
        #expect(store.orderingCounters.sortIndexRebuilds == rebuilds + 1, "few albums remain: the sort indexes are rebuilt")
        #expect(try BulkImportTests.indexSchema(store) == migrated)
        #expect(try store.libraries().map(\.id) == [.default])
        #expect(try Fixtures.allAlbums(store) == (othersHoldAlbums ? kept : []))
        _ = try store.checkConsistency(.default)
        if othersHoldAlbums {
            // The rebuilt indexes hold what remains: a keyset page by title finds every kept album.
            let titles = try store.read(.default) { try $0.albums(matching: .all, sort: AlbumSort(.title), from: .start, limit: 100) }
            #expect(titles?.map(\.id).sorted() == kept.map(\.id).sorted())
        }
        let again = try store.createLibrary(big, name: "Big")
        #expect(again.albumCount == 0 && again.version == 2)
        try store.read(big) { reader throws in
            #expect(try reader.count() == 0)
            #expect(try reader.states().isEmpty)
            #expect(try reader.undoDepth() == 0)
            #expect(try reader.changes(after: 0, limit: 5).isEmpty)
        }
        #expect(try store.checkConsistency(big) == SQLiteAlbumStore.OrderingReport(
            albumCount: 0, bucketCount: 0, largestBucket: 0, smallestBucket: 0))
        // Its ids are free again, in any library.
        try store.write(.default) { writer in try writer.insert(Fixtures.album(7), at: 0) }
    }
}
