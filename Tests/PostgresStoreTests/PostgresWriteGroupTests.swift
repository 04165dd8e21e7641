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

/// Group commit per library on PostgreSQL: writes that queue behind a running one share one
/// transaction, each under its own savepoint.
@Suite("PostgreSQL store: write groups", .ownThreads)
struct PostgresWriteGroupTests {
    private struct Refused: Error, Equatable {}
    private static let jazz = LibraryID(rawValue: "jazz")

    /// A store on a fresh database with the library `jazz`, and a write of album `number` to it
    /// that holds the library's transaction until `release` is signalled: writes queue behind it.
    private static func storeWithAHeldWrite(of number: UInt64) throws -> (PostgresAlbumStore, Worker<Void>, release: DispatchSemaphore) {
        let store = try PostgresAlbumStore(
            pool: PostgresPool(PostgresPool.Configuration(url: try PostgresServer.shared().makeDatabase(), size: 4)),
            configuration: PostgresAlbumStore.Configuration(bucketSize: 4))
        _ = try store.createLibrary(jazz, name: "Jazz")
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let held = Worker.run {
            try store.write(jazz) { writer throws in
                entered.signal()
                release.wait()
                try writer.insert(testAlbum(number), at: 0)
                _ = try writer.bumpVersion()
            }
        }
        entered.wait()
        return (store, held, release)
    }

    @Test func writesQueuedBehindARunningOneCommitTogetherAndAFailingOneFailsAlone() throws {
        let (store, first, release) = try Self.storeWithAHeldWrite(of: 100)
        let before = store.writeGroupStatistics
        // Six writes queue behind it; the third inserts, then refuses (its savepoint is undone).
        let queued = (1...6).map { number in
            Worker.run {
                try store.write(Self.jazz) { writer throws in
                    try writer.insert(testAlbum(UInt64(number)), at: try writer.count())
                    _ = try writer.bumpVersion()
                    if number == 3 { throw Refused() }
                }
            }
        }
        #expect(eventually { store.queuedWriteCount == 6 })
        release.signal()
        try first.join()
        for (index, write) in queued.enumerated() {
            if index == 2 {
                #expect(throws: Refused.self) { try write.join() }
            } else {
                try write.join()
            }
        }

        let after = store.writeGroupStatistics
        #expect(after.transactions == before.transactions + 2, "the first write alone, then the six in one transaction")
        #expect(after.jobs == before.jobs + 7)
        #expect(after.largestBatch == 6)
        let (version, ids) = try store.read(Self.jazz) { reader in
            (try reader.version(), try reader.albums(offset: 0, limit: 10).map(\.id))
        }
        #expect(version == 6, "one version per committed write, none for the refused one")
        #expect(Set(ids) == Set([100, 1, 2, 4, 5, 6].map { AlbumStoreContract.id($0) }))
        #expect(ids.first == AlbumStoreContract.id(100))
        let report = try store.checkConsistency(Self.jazz)
        #expect(report.albumCount == 6)
    }

    @Test func aWriteWhoseQueuedStatementFailsIsRolledBackAloneInItsBatch() throws {
        let (store, first, release) = try Self.storeWithAHeldWrite(of: 1)
        // The second of the three records a change whose version the first of them recorded: the
        // change row is queued (runLater) and fails only when sent, with its savepoint's RELEASE.
        // Queued one after the other, so the batch runs them in this order.
        let writes = [2, 3, 4].enumerated().map { queuedBefore, number in
            let write = Worker.run {
                try store.write(Self.jazz) { writer throws in
                    try writer.insert(testAlbum(UInt64(number)), at: 0)
                    try writer.recordChange(LibraryChange(
                        version: number == 3 ? 2 : Int64(number), kind: .added, id: AlbumStoreContract.id(UInt64(number)),
                        index: 0, recordedAt: Date(timeIntervalSince1970: 1_700_000_000)))
                }
            }
            #expect(eventually { store.queuedWriteCount == queuedBefore + 1 })
            return write
        }
        let before = store.writeGroupStatistics
        release.signal()
        try first.join()
        try writes[0].join()
        let failure = try #require(throws: PostgresError.self) { try writes[1].join() }
        #expect(failure.kind == .uniqueViolation)
        try writes[2].join()
        #expect(store.writeGroupStatistics.transactions == before.transactions + 2, "the first alone, the three together")
        let ids = try store.read(Self.jazz) { try $0.albums(offset: 0, limit: 10).map(\.id) }
        #expect(Set(ids) == Set([1, 2, 4].map { AlbumStoreContract.id($0) }))
        #expect(try store.read(Self.jazz) { try $0.changes(after: 0, limit: 10) }.map(\.version) == [2, 4])
    }
}

/// A thread running `body`; `join()` waits for it and returns its result (or throws its error).
private final class Worker<T: Sendable>: @unchecked Sendable {
    private var result: Result<T, any Error>?
    private let done = DispatchSemaphore(value: 0)

    static func run(_ body: @escaping @Sendable () throws -> T) -> Worker<T> {
        let thread = Worker()
        Thread.detachNewThread {
            thread.result = Result { try body() }
            thread.done.signal()
        }
        return thread
    }

    func join() throws -> T {
        done.wait()
        return try result!.get()
    }
}
