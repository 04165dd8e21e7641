import Dispatch
import Foundation
import HTTPTestSupport
import Library
import SQLite
import Storage
import TestThreads
import Synchronization
import Testing

/// SQLite's search index (schema v8: an FTS5 table over `albums.search_text`, kept in step by
/// triggers) after every kind of write: its integrity check against the table passes
/// (`checkConsistency`), and a search that starts from it or is filtered by it finds what the
/// reference finds, as one that walks the order does.
@Suite("SQLite: the search index follows every write", .ownThreads)
struct SearchIndexTests {
    static let queries = ["an", "angel ca", "CAFÉ", "bjork", "the beatles", #""the beatles""#, "rock", "o", "zzzz"]

    /// Both paths answer every query as the reference does, and the index passes its check.
    static func expectInStep(
        _ indexed: SQLiteAlbumStore, _ walking: SQLiteAlbumStore, _ library: LibraryID, _ model: [Album],
        _ step: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(try indexed.checkConsistency(library).albumCount == model.count, "\(step)", sourceLocation: sourceLocation)
        for text in queries {
            let filter = AlbumFilter(text: text)
            let expected = Reference.order(model, filter, AlbumSort(.title)).map(\.id)
            for (path, store) in [("index", indexed), ("walk", walking)] {
                let page = try store.read(library) { try $0.albums(matching: filter, sort: AlbumSort(.title), from: .start, limit: 10_000) }
                #expect(page?.map(\.id) == expected, "\(step), q=\(text), \(path)", sourceLocation: sourceLocation)
                let count = try store.read(library) { try $0.count(matching: filter) }
                #expect(count == expected.count, "\(step), count q=\(text), \(path)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func insertsUpdatesDeletesMovesAndReplacementsKeepItInStep() throws {
        let directory = try TemporaryDirectory()
        let indexed = try Fixtures.store(directory, bucketSize: 8, searchIndexLimits: (.max, .max))
        let walking = try Fixtures.store(directory, bucketSize: 8, searchIndexLimits: (0, 0))
        var random = SeededGenerator(seed: 31)
        var model: [Album] = []
        try indexed.write(.default) { writer in
            for _ in 0..<400 {
                let album = Generated.album(using: &random)
                let index = Int.random(in: 0...model.count, using: &random)
                try writer.insert(album, at: index)
                model.insert(album, at: index)
            }
        }
        try Self.expectInStep(indexed, walking, .default, model, "inserts")

        try indexed.write(.default) { writer in
            for _ in 0..<60 {
                let index = Int.random(in: 0..<model.count, using: &random)
                var album = model[index]
                let other = Generated.album(using: &random)
                album.title = other.title
                album.artist = other.artist
                try writer.update(album)
                model[index] = album
            }
            for _ in 0..<40 {
                let album = model.remove(at: Int.random(in: 0..<model.count, using: &random))
                try writer.delete(id: album.id)
            }
            for _ in 0..<40 {
                let album = model.remove(at: Int.random(in: 0..<model.count, using: &random))
                let index = Int.random(in: 0...model.count, using: &random)
                try writer.move(id: album.id, to: index)
                model.insert(album, at: index)
            }
        }
        try Self.expectInStep(indexed, walking, .default, model, "updates, deletes, moves")

        // Another library's albums, then a replacement of the default library (an import).
        let other = LibraryID(rawValue: "other")
        _ = try indexed.createLibrary(other, name: "Other")
        let otherAlbums = (0..<50).map { _ in Generated.album(using: &random) }
        try indexed.write(other) { writer in
            for (index, album) in otherAlbums.enumerated() { try writer.insert(album, at: index) }
        }
        model = (0..<300).map { _ in Generated.album(using: &random) }
        try indexed.write(.default) { writer in
            try writer.deleteAllAlbums()
            for (index, album) in model.enumerated() { try writer.insert(album, at: index) }
        }
        try Self.expectInStep(indexed, walking, .default, model, "replacement")
        try Self.expectInStep(indexed, walking, other, otherAlbums, "the other library")

        // A library deleted whole.
        try indexed.deleteLibrary(other)
        try Self.expectInStep(indexed, walking, .default, model, "after deleting the other library")
    }

    /// Searches while a writer adds, edits, deletes, moves and imports: every search, on every
    /// path, answers exactly what its own snapshot holds (the reference over all the albums read
    /// in the same read transaction).
    @Test func searchesDuringWritesAndAnImportSeeTheirSnapshot() throws {
        let directory = try TemporaryDirectory()
        let writer = try Fixtures.store(directory, bucketSize: 8)
        let readers = [
            ("walk", try Fixtures.store(directory, bucketSize: 8, searchIndexLimits: (0, 0))),
            ("filter", try Fixtures.store(directory, bucketSize: 8, searchIndexLimits: (0, .max))),
            ("index", try Fixtures.store(directory, bucketSize: 8, searchIndexLimits: (.max, .max))),
        ]
        var random = SeededGenerator(seed: 51)
        let first = (0..<600).map { _ in Generated.album(using: &random) }
        try writer.write(.default) { writer in
            for (index, album) in first.enumerated() { try writer.insert(album, at: index) }
        }
        let writing = Atomic<Bool>(true)
        let searches = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 1 + readers.count) { role in
            do {
                if role == 0 {
                    defer { writing.store(false, ordering: .releasing) }
                    var random = SeededGenerator(seed: 52)
                    var ids = first.map(\.id)
                    for step in 0..<300 {
                        try writer.write(.default) { writer in
                            switch step % 5 {
                            case 0, 1:
                                let album = Generated.album(using: &random)
                                try writer.insert(album, at: Int.random(in: 0...ids.count, using: &random))
                                ids.append(album.id)
                            case 2:
                                guard var album = try writer.album(id: ids.randomElement(using: &random)!) else { return }
                                album.title = Generated.album(using: &random).title
                                try writer.update(album)
                            case 3:
                                try writer.delete(id: ids.remove(at: Int.random(in: 0..<ids.count, using: &random)))
                            default:
                                try writer.move(id: ids.randomElement(using: &random)!, to: Int.random(in: 0..<ids.count, using: &random))
                            }
                        }
                        if step == 150 {
                            // An import: the library replaced in one transaction, past the
                            // bulk threshold (the triggers dropped, the index rebuilt).
                            let imported = (0..<BulkImportTests.bulkCount).map { _ in Generated.album(using: &random) }
                            try writer.write(.default) { writer in
                                try writer.deleteAllAlbums()
                                for (index, album) in imported.enumerated() { try writer.insert(album, at: index) }
                            }
                            ids = imported.map(\.id)
                        }
                    }
                } else {
                    let (path, store) = readers[role - 1]
                    repeat {
                        try store.read(.default) { reader in
                            let all = try reader.albums(matching: .all, sort: AlbumSort(.position), from: .start, limit: 1_000_000) ?? []
                            for text in Self.queries {
                                let filter = AlbumFilter(text: text)
                                let found = try reader.albums(matching: filter, sort: AlbumSort(.title), from: .start, limit: 1_000_000)
                                let expected = Reference.order(all, filter, AlbumSort(.title)).map(\.id)
                                if found?.map(\.id) != expected {
                                    failures.withLock { $0.append("\(path), q=\(text): \(found?.count ?? -1) found, \(expected.count) expected") }
                                }
                                if try reader.count(matching: filter) != expected.count {
                                    failures.withLock { $0.append("\(path), count q=\(text)") }
                                }
                            }
                        }
                        searches.add(1, ordering: .relaxed)
                    } while writing.load(ordering: .acquiring)
                }
            } catch {
                failures.withLock { $0.append("\(role): \(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(searches.load(ordering: .relaxed) >= readers.count, "every reader searched")
        #expect(try writer.checkConsistency(.default).albumCount == (try writer.read(.default) { try $0.count() }))
    }

    /// A bulk import drops the triggers with the sort indexes and rebuilds the search index
    /// once before its commit; a failed one rolls the triggers and the index back with the rows.
    @Test func aBulkImportRebuildsItAndAFailedOneLeavesItAsItWas() throws {
        let directory = try TemporaryDirectory()
        let indexed = try Fixtures.store(directory, bucketSize: 64, searchIndexLimits: (.max, .max))
        let walking = try Fixtures.store(directory, bucketSize: 64, searchIndexLimits: (0, 0))
        let first = BulkImportTests.albums(BulkImportTests.bulkCount, seed: 41)
        try indexed.write(.default) { writer in
            for (index, album) in first.enumerated() { try writer.insert(album, at: index) }
        }
        #expect(indexed.orderingCounters.sortIndexRebuilds == 1)
        try Self.expectInStep(indexed, walking, .default, first, "bulk import")

        struct Refused: Error {}
        let second = BulkImportTests.albums(BulkImportTests.bulkCount, seed: 42)
        #expect(throws: Refused.self) {
            try indexed.write(.default) { writer in
                try writer.deleteAllAlbums()
                for (index, album) in second.enumerated() { try writer.insert(album, at: index) }
                throw Refused()
            }
        }
        try Self.expectInStep(indexed, walking, .default, first, "failed bulk import")

        // Small writes after the rebuild reach the index through the recreated triggers.
        let late = BulkImportTests.albums(2, seed: 43)
        try indexed.write(.default) { writer in
            try writer.insert(late[0], at: 0)
            try writer.delete(id: first[1].id)
            try writer.insert(late[1], at: 10)
        }
        var model = first
        model.insert(late[0], at: 0)
        model.removeAll { $0.id == first[1].id }
        model.insert(late[1], at: 10)
        try Self.expectInStep(indexed, walking, .default, model, "writes after the rebuild")
    }
}
