import AlbumStoreContract
import Essentials
import Foundation
import HTTPTestSupport
import Library
import Postgres
import Storage
import Synchronization
import Testing

/// Writes through several instances at once: each thread has its own `PostgresAlbumStore` on
/// its own pool (as separate processes would), all writing one library concurrently. Versions
/// and the order are decided in the database, so the change feed must hold every version once,
/// with no gap, and replaying it must give exactly the order the store holds.
@Suite("PostgreSQL store: concurrent instances")
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
    private static func replay(_ changes: [LibraryChange]) throws -> [AlbumID] {
        var order: [AlbumID] = []
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
