import AlbumStoreContract
import Essentials
import Foundation
import HTTPTestSupport
import Library
import Postgres
import Storage
import Synchronization
import TestThreads
import Testing

/// Writes through several instances at once: each thread has its own `PostgresAlbumStore` on
/// its own pool (as separate processes would), all writing one library concurrently. Versions
/// and the order are decided in the database, so the change feed must hold every version once,
/// with no gap, and replaying it must give exactly the order the store holds.
@Suite("PostgreSQL store: concurrent instances", .ownThreads)
struct ConcurrentInstancesTests {
    static let instances = 4
    static let writesPerInstance = 40
    static let seeded = 12

    @Test func concurrentWritesThroughSeveralInstancesKeepVersionsAndOrder() throws {
        let url = try PostgresServer.shared().makeDatabase()
        let first = try Self.store(url)
        for number in 0..<Self.seeded {
            try first.write(.default) { writer throws in
                let index = try writer.count()
                try writer.insert(Self.album(instance: 99, number), at: index)
                let version = try writer.bumpVersion()
                try writer.recordChange(
                    LibraryChange(version: version, kind: .added, id: Self.album(instance: 99, number).id, index: index, recordedAt: Date()))
            }
        }

        let failures = Failures()
        let done = DispatchGroup()
        for instance in 0..<Self.instances {
            done.enter()
            let thread = Thread {
                defer { done.leave() }
                do {
                    try Self.writeConcurrently(url: url, instance: instance)
                } catch {
                    failures.list.withLock { $0.append("instance \(instance): \(error)") }
                }
            }
            thread.start()
        }
        done.wait()
        #expect(failures.list.withLock { $0 } == [])

        let total = Self.seeded + Self.instances * Self.writesPerInstance
        let (changes, order, version) = try first.read(.default) { reader throws in
            (try reader.changes(after: 0, limit: total + 10), try reader.albums(offset: 0, limit: total + 10).map(\.id),
             try reader.version())
        }
        #expect(changes.map(\.version) == Array(1...Int64(total)), "every version once, no gap")
        #expect(version == Int64(total))
        #expect(try Self.replay(changes) == order, "the feed replays to the stored order")
        let report = try first.checkConsistency(.default)
        #expect(report.albumCount == order.count)
    }

    /// Moves between two libraries in both directions (each a write over both, named in either
    /// order) and inserts at index 0 of either, through several instances at once: the row locks
    /// are taken in id order, so no two writes deadlock; each library's feed is gap-free and
    /// replays to its order, and every album is in exactly one library.
    @Test func concurrentMovesBetweenLibrariesNeitherDeadlockNorLoseAlbums() throws {
        let url = try PostgresServer.shared().makeDatabase()
        let first = try Self.store(url)
        let jazz = LibraryID(rawValue: "jazz")
        _ = try first.createLibrary(jazz, name: "Jazz")
        for (offset, library) in [LibraryID.default, jazz].enumerated() {
            try first.write(library) { writer throws in
                for number in 0..<6 { try writer.insert(Self.album(instance: 90 + offset, number), at: number) }
                let version = try writer.bumpVersion()
                try writer.recordChange(LibraryChange(version: version, kind: .replaced, id: nil, index: nil, recordedAt: Date()))
            }
        }

        let failures = Failures()
        let inserted = Failures()
        let done = DispatchGroup()
        for instance in 0..<Self.instances {
            done.enter()
            let thread = Thread {
                defer { done.leave() }
                do {
                    let ids = try Self.moveConcurrently(url: url, instance: instance, between: [.default, jazz])
                    inserted.list.withLock { $0 += ids.map(\.rawValue) }
                } catch {
                    failures.list.withLock { $0.append("instance \(instance): \(error)") }
                }
            }
            thread.start()
        }
        done.wait()
        #expect(failures.list.withLock { $0 } == [])

        var held: [AlbumID] = []
        var expected = Set(inserted.list.withLock { $0 })
        for library in [LibraryID.default, jazz] {
            let (changes, order) = try first.read(library) { reader throws in
                (try reader.changes(after: 0, limit: 10_000), try reader.albums(offset: 0, limit: 10_000).map(\.id))
            }
            #expect(changes.map(\.version) == Array(1...Int64(changes.count)), "\(library): every version once, no gap")
            let initial = (0..<6).map { Self.album(instance: library == .default ? 90 : 91, $0).id }
            expected.formUnion(initial.map(\.rawValue))
            #expect(try Self.replay(changes.dropFirst(), from: initial) == order, "\(library): the feed replays to the order")
            _ = try first.checkConsistency(library)
            held += order
        }
        #expect(Set(held).count == held.count, "no album is in two libraries")
        #expect(Set(held.map(\.rawValue)) == expected, "every album inserted is held, none lost")
    }

    /// One instance's writes over two libraries: a move of a random album from one to the other
    /// (writers named in a random order), or an insert at index 0.
    /// Returns the ids it inserted.
    private static func moveConcurrently(url: String, instance: Int, between libraries: [LibraryID]) throws -> [AlbumID] {
        let store = try store(url)
        var inserted: [AlbumID] = []
        var generator = SeededGenerator(seed: UInt64(instance + 11))
        for number in 0..<writesPerInstance {
            let roll = Int.random(in: 0..<10, using: &generator)
            let pick = Int.random(in: 0..<1_000_000, using: &generator)
            let order = roll % 2 == 0 ? libraries : libraries.reversed()
            try store.write(order) { writers throws in
                let (source, target) = pick % 2 == 0 ? (writers[0], writers[1]) : (writers[1], writers[0])
                let (sourceID, targetID) = pick % 2 == 0 ? (order[0], order[1]) : (order[1], order[0])
                let count = try source.count()
                if count == 0 || roll < 3 {
                    let album = album(instance: instance, number)
                    try target.insert(album, at: 0)
                    try target.recordChange(
                        LibraryChange(version: try target.bumpVersion(), kind: .added, id: album.id, index: 0, recordedAt: Date()))
                    inserted.append(album.id)
                    return
                }
                let index = pick % count
                let moved = try #require(try source.album(at: index))
                try source.delete(id: moved.id)
                try source.recordChange(LibraryChange(
                    version: try source.bumpVersion(), kind: .deleted, id: moved.id, index: index, peer: targetID,
                    recordedAt: Date()))
                let destination = (pick / 2) % (try target.count() + 1)
                try target.insert(moved, at: destination)
                try target.recordChange(LibraryChange(
                    version: try target.bumpVersion(), kind: .added, id: moved.id, index: destination, peer: sourceID,
                    recordedAt: Date()))
            }
        }
        return inserted
    }

    /// One instance's writes: inserts at index 0 (and anywhere), moves, deletes, each one
    /// transaction that bumps the version once and records its change.
    private static func writeConcurrently(url: String, instance: Int) throws {
        let store = try store(url)
        var generator = SeededGenerator(seed: UInt64(instance + 1))
        for number in 0..<writesPerInstance {
            let roll = Int.random(in: 0..<10, using: &generator)
            let pick = Int.random(in: 0..<1_000_000, using: &generator)
            let target = Int.random(in: 0..<1_000_000, using: &generator)
            try store.write(.default) { writer throws in
                let count = try writer.count()
                let change: LibraryChange
                if count < 2 || roll < 5 {
                    let album = album(instance: instance, number)
                    let index = roll < 3 ? 0 : pick % (count + 1)
                    try writer.insert(album, at: index)
                    change = LibraryChange(version: try writer.bumpVersion(), kind: .added, id: album.id, index: index, recordedAt: Date())
                } else if roll < 8 {
                    let from = pick % count
                    let to = target % count
                    let moved = try #require(try writer.album(at: from))
                    try writer.move(id: moved.id, to: to)
                    change = LibraryChange(
                        version: try writer.bumpVersion(), kind: .moved, id: moved.id, index: to, fromIndex: from, recordedAt: Date())
                } else {
                    let index = pick % count
                    let deleted = try #require(try writer.album(at: index))
                    try writer.delete(id: deleted.id)
                    change = LibraryChange(version: try writer.bumpVersion(), kind: .deleted, id: deleted.id, index: index, recordedAt: Date())
                }
                try writer.recordChange(change)
            }
        }
    }

    /// The order the change feed describes, applied to an empty list; a change that does not fit
    /// the list as replayed so far (another album at its index) fails the test.
    private static func replay(_ changes: some Sequence<LibraryChange>, from initial: [AlbumID] = []) throws -> [AlbumID] {
        var order = initial
        for change in changes {
            let id = try #require(change.id)
            let index = try #require(change.index)
            switch change.kind {
            case .added:
                try #require(index <= order.count, "version \(change.version) adds at \(index) of \(order.count)")
                order.insert(id, at: index)
            case .deleted:
                try #require(order.indices.contains(index) && order[index] == id, "version \(change.version) deletes \(id) at \(index)")
                order.remove(at: index)
            case .moved:
                let from = try #require(change.fromIndex)
                try #require(order.indices.contains(from) && order[from] == id, "version \(change.version) moves \(id) from \(from)")
                order.remove(at: from)
                try #require(index <= order.count)
                order.insert(id, at: index)
            case .updated, .replaced:
                Issue.record("unexpected change \(change)")
            }
        }
        return order
    }

    /// An instance: its own pool (two connections), its own store.
    private static func store(_ url: String) throws -> PostgresAlbumStore {
        try PostgresAlbumStore(
            pool: PostgresPool(PostgresPool.Configuration(url: url, size: 2)),
            configuration: PostgresAlbumStore.Configuration(bucketSize: 4))
    }

    /// A distinct album per instance and number.
    private static func album(instance: Int, _ number: Int) -> Album {
        let millis = 1_700_000_000_000 + Int64(instance * 1000 + number) * 1_001
        return Album(
            id: AlbumStoreContract.id(UInt64(instance * 1000 + number + 1)), title: "Album \(instance)-\(number)",
            artist: "Artist \(number % 7)", genre: Album.defaultGenre, year: 1960 + number % 50, coverUrl: nil,
            createdAt: Timestamp.date(milliseconds: millis), updatedAt: Timestamp.date(milliseconds: millis))
    }
}

/// Errors of the writer threads.
private final class Failures: Sendable {
    let list = Mutex<[String]>([])
}
