import Foundation
import HTTPTestSupport
import Library
import SQLite
import Storage
import TestThreads
import Testing

/// A transaction that fills a library from empty with many appends (an archive import) drops
/// the sort indexes and rebuilds them before its commit. From outside this must be invisible:
/// the same schema, the same plans, the same pages, and a rollback that restores everything.
@Suite("Bulk imports without the sort indexes", .ownThreads)
struct BulkImportTests {
    /// More appends than the store's threshold for dropping the indexes (10,000).
    static let bulkCount = 10_500

    /// Every index of the database with its `CREATE` text, as `sqlite_master` records it.
    static func indexSchema(_ store: SQLiteAlbumStore) throws -> [String: String] {
        let connection = try Connection(path: store.path)
        var schema: [String: String] = [:]
        try connection.forEachRow("SELECT name, IFNULL(sql, '') FROM sqlite_master WHERE type = 'index'") { row in
            schema[try row.string(0)] = try row.string(1)
        }
        return schema
    }

    static let sortIndexNames = Array(PagingTests.sortIndex.values).sorted()

    static func albums(_ count: Int, seed: UInt64) -> [Album] {
        var random = SeededGenerator(seed: seed)
        return (0..<count).map { _ in Generated.album(using: &random) }
    }

    /// Every album of `library` in `sort` order, page after page through keyset anchors.
    static func walk(_ store: SQLiteAlbumStore, _ library: LibraryID, _ sort: AlbumSort, limit: Int = 997) throws -> [Album] {
        var all: [Album] = []
        var anchor = SortAnchor.start
        while true {
            let page = try store.read(library) { try $0.albums(matching: .all, sort: sort, from: anchor, limit: limit) } ?? []
            all += page
            guard page.count == limit, let last = page.last else { return all }
            anchor = sort.field == .position ? .afterAlbum(last.id) : .afterValue(SortValue.of(last, for: sort.field, articles: .standard)!, last.id)
        }
    }

    /// Keyset pages of every value sort seek their index (the plans `PagingTests` expects).
    static func expectIndexedPlans(_ store: SQLiteAlbumStore, _ library: LibraryID, anchor album: Album) throws {
        for sort in PagingTests.sorts where sort.field != .position {
            let anchor = SortAnchor.afterValue(SortValue.of(album, for: sort.field, articles: .standard)!, album.id)
            let index = try #require(PagingTests.sortIndex[sort.field])
            for start in [SortAnchor.start, anchor] {
                let plans = try store.pagePlans(library, matching: .all, sort: sort, from: start, limit: 51)
                #expect(plans.count == 1)
                for plan in plans {
                    #expect(plan.contains("USING INDEX \(index) (library=?"), "sort \(sort), \(start): \(plan)")
                    #expect(!plan.contains("TEMP B-TREE") && !plan.contains("SCAN"), "sort \(sort), \(start): \(plan)")
                }
            }
        }
    }

    @Test func aBulkImportRebuildsTheSortIndexesAsTheMigrationMadeThem() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 64)
        let migrated = try Self.indexSchema(store)
        for name in Self.sortIndexNames { #expect(migrated[name] != nil, "\(name) after the migrations") }

        // Another library with albums, whose rows the rebuilt indexes must cover too.
        let other = LibraryID(rawValue: "other")
        _ = try store.createLibrary(other, name: "Other")
        let otherAlbums = Self.albums(700, seed: 5)
        try store.write(other) { writer in
            for (index, album) in otherAlbums.enumerated() { try writer.insert(album, at: index) }
        }
        #expect(store.orderingCounters.sortIndexRebuilds == 0, "700 appends stay below the threshold")

        // An import into the empty default library, then one replacing it (as PUT /archive does).
        let first = Self.albums(Self.bulkCount, seed: 6)
        try store.write(.default) { writer in
            for (index, album) in first.enumerated() { try writer.insert(album, at: index) }
        }
        #expect(store.orderingCounters.sortIndexRebuilds == 1)
        let second = Self.albums(Self.bulkCount + 321, seed: 7)
        try store.write(.default) { writer in
            try writer.deleteAllAlbums()
            for (index, album) in second.enumerated() { try writer.insert(album, at: index) }
            _ = try writer.bumpVersion()
        }
        #expect(store.orderingCounters.sortIndexRebuilds == 2)

        #expect(try Self.indexSchema(store) == migrated)
        try Self.expectIndexedPlans(store, .default, anchor: second[second.count / 3])
        try Self.expectIndexedPlans(store, other, anchor: otherAlbums[100])
        for sort in PagingTests.sorts {
            let walked = try Self.walk(store, .default, sort)
            #expect(walked.map(\.id) == Reference.order(second, .all, sort).map(\.id), "default library, sort \(sort)")
            let otherWalked = try Self.walk(store, other, sort, limit: 97)
            #expect(otherWalked.map(\.id) == Reference.order(otherAlbums, .all, sort).map(\.id), "other library, sort \(sort)")
        }
        try Self.expectHolds(store, second, other: other, otherAlbums)

        // Ordinary writes after the import keep the rebuilt indexes current.
        let late = Self.albums(3, seed: 8)
        try store.write(.default) { writer in
            try writer.insert(late[0], at: 0)
            try writer.insert(late[1], at: 5_000)
            try writer.delete(id: second[7].id)
            try writer.insert(late[2], at: try writer.count())
        }
        var expected = second
        expected.insert(late[0], at: 0)
        expected.insert(late[1], at: 5_000)
        expected.removeAll { $0.id == second[7].id }
        expected.append(late[2])
        for sort in [AlbumSort(.title), AlbumSort(.year, descending: true), AlbumSort(.createdAt)] {
            #expect(try Self.walk(store, .default, sort).map(\.id) == Reference.order(expected, .all, sort).map(\.id), "sort \(sort)")
        }
        #expect(store.orderingCounters.sortIndexRebuilds == 2, "small writes never drop the indexes")

        // Replacing the large library by a small archive: the emptying drops the indexes and the
        // search triggers (too few appends follow to drop them), and the commit rebuilds them.
        let small = Self.albums(300, seed: 9)
        try store.write(.default) { writer in
            try writer.deleteAllAlbums()
            for (index, album) in small.enumerated() { try writer.insert(album, at: index) }
            _ = try writer.bumpVersion()
        }
        #expect(store.orderingCounters.sortIndexRebuilds == 3, "emptying a large library drops the indexes")
        #expect(try Self.indexSchema(store) == migrated)
        try Self.expectHolds(store, small, other: other, otherAlbums)
    }

    /// The default library holds `albums` (every filter counts as the reference does, the
    /// search index included) and `other` holds `otherAlbums`, both consistent.
    static func expectHolds(_ store: SQLiteAlbumStore, _ albums: [Album], other: LibraryID, _ otherAlbums: [Album]) throws {
        for (name, filter) in PagingTests.filters {
            let count = try store.read(.default) { try $0.count(matching: filter) }
            #expect(count == albums.filter(filter.matches).count, "count matching \(name)")
        }
        #expect(try Fixtures.allAlbums(store) == albums)
        #expect(try store.checkConsistency(.default).albumCount == albums.count)
        #expect(try store.checkConsistency(other).albumCount == otherAlbums.count)
    }

    @Test(arguments: ["a thrown error", "a duplicate album"])
    func aFailingBulkImportLeavesTheIndexesAndTheDataAsTheyWere(_ failure: String) throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 64)
        let original = Self.albums(2_000, seed: 11)
        try store.write(.default) { writer in
            for (index, album) in original.enumerated() { try writer.insert(album, at: index) }
            _ = try writer.bumpVersion()
        }
        let schema = try Self.indexSchema(store)
        let version = try store.read(.default) { try $0.version() }
        let rebuildsBefore = store.orderingCounters.sortIndexRebuilds

        var replacement = Self.albums(Self.bulkCount + 100, seed: 12)
        if failure == "a duplicate album" {
            // The last album repeats an earlier id: the insert fails after the indexes are gone.
            replacement[replacement.count - 1] = Album(
                id: replacement[3].id, title: "Again", artist: "Again", genre: "Pop", year: 2000, coverUrl: nil,
                createdAt: replacement[3].createdAt, updatedAt: replacement[3].updatedAt)
        }
        let replacementAlbums = replacement
        #expect(throws: (any Error).self) {
            try store.write(.default) { writer in
                try writer.deleteAllAlbums()
                for (index, album) in replacementAlbums.enumerated() { try writer.insert(album, at: index) }
                _ = try writer.bumpVersion()
                throw MarkerError(token: 1)
            }
        }
        #expect(store.orderingCounters.sortIndexRebuilds == rebuildsBefore + 1, "the import did drop the indexes")

        #expect(try Self.indexSchema(store) == schema)
        for name in Self.sortIndexNames { #expect(schema[name] != nil, "\(name) is back") }
        #expect(try store.read(.default) { try $0.version() } == version)
        #expect(try Fixtures.allAlbums(store) == original)
        #expect(try store.checkConsistency(.default).albumCount == original.count)
        try Self.expectIndexedPlans(store, .default, anchor: original[1_234])
        for sort in PagingTests.sorts {
            #expect(try Self.walk(store, .default, sort).map(\.id) == Reference.order(original, .all, sort).map(\.id), "sort \(sort)")
        }

        // The store keeps working: the same import without the failure commits.
        let valid = Self.albums(Self.bulkCount, seed: 13)
        try store.write(.default) { writer in
            try writer.deleteAllAlbums()
            for (index, album) in valid.enumerated() { try writer.insert(album, at: index) }
        }
        #expect(try Self.indexSchema(store) == schema)
        #expect(try Fixtures.allAlbums(store) == valid)
    }

    @Test func aReaderDuringABulkImportKeepsItsIndexedSnapshot() throws {
        // Readers never see the schema without the indexes: the drop is part of the
        // uncommitted transaction. A read on another connection in the middle of the import
        // pages the old library with the indexed plan.
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 64)
        let original = Self.albums(500, seed: 21)
        try store.write(.default) { writer in
            for (index, album) in original.enumerated() { try writer.insert(album, at: index) }
        }
        let replacement = Self.albums(Self.bulkCount, seed: 22)
        let anchor = original[100]
        try store.write(.default) { writer in
            try writer.deleteAllAlbums()
            for (index, album) in replacement.enumerated() { try writer.insert(album, at: index) }
            try Self.expectIndexedPlans(store, .default, anchor: anchor)
            #expect(try Self.walk(store, .default, AlbumSort(.title)).map(\.id)
                == Reference.order(original, .all, AlbumSort(.title)).map(\.id))
        }
        #expect(store.orderingCounters.sortIndexRebuilds == 1)
        #expect(try Fixtures.allAlbums(store) == replacement)
    }
}
