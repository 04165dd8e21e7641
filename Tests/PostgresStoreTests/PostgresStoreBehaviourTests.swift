import AlbumStoreContract
import Essentials
import Foundation
import Synchronization
import HTTPTestSupport
import Library
import Postgres
@testable import Storage
import TestThreads
import Testing

/// What the PostgreSQL store promises beyond the contract: notifications other instances
/// listen for, the versions of several libraries in one statement, duplicate ids named with
/// their library, and a stopped server's errors reaching the caller unchanged.
@Suite("PostgreSQL store: notifications, versions, errors", .ownThreads)
struct PostgresStoreBehaviourTests {
    @Test func aCommittedVersionNotifiesItsLibraryAndARollbackNothing() throws {
        let url = try PostgresServer.shared().makeDatabase()
        let store = try Self.store(url)
        let listener = try PostgresConnection(url: url)
        try listener.listen(PostgresAlbumStore.commitChannel)
        try listener.listen(PostgresAlbumStore.catalogChannel)
        let jazz = LibraryID(rawValue: "jazz")

        _ = try store.createLibrary(jazz, name: "Jazz")
        #expect(try Self.drain(listener) == [PostgresNotification(channel: PostgresAlbumStore.catalogChannel, payload: "")])

        try store.write(jazz) { writer throws in
            try writer.insert(testAlbum(1), at: 0)
            _ = try writer.bumpVersion()
        }
        #expect(try Self.drain(listener) == [PostgresNotification(channel: PostgresAlbumStore.commitChannel, payload: "jazz")])

        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try store.write(jazz) { writer throws in
                try writer.insert(testAlbum(2), at: 0)
                _ = try writer.bumpVersion()
                throw Refused()
            }
        }
        try store.write(.default) { writer throws in try writer.saveState(SavedState(client: "a", currentAlbumIndex: 0, albumID: nil, updatedAt: nil)) }
        try store.saveView(ViewDefinition(id: ViewID(rawValue: "all"), name: "All", sources: [jazz], filter: .all, revision: 1))
        #expect(try Self.drain(listener) == [PostgresNotification(channel: PostgresAlbumStore.catalogChannel, payload: "")],
                "a rolled-back write and a write that bumps no version notify nothing; a view change does")
    }

    @Test func versionsOfSeveralLibrariesInOrderAndMissingOnesRefused() throws {
        let store = try Self.store(try PostgresServer.shared().makeDatabase())
        let jazz = LibraryID(rawValue: "jazz")
        let gone = LibraryID(rawValue: "gone")
        _ = try store.createLibrary(jazz, name: "Jazz")
        _ = try store.createLibrary(gone, name: "Gone")
        try store.write(jazz) { writer throws in
            _ = try writer.bumpVersion()
            _ = try writer.bumpVersion()
        }
        try store.deleteLibrary(gone)
        #expect(try store.versions(of: [jazz, .default]) == [2, 0])
        #expect(try store.versions(of: [.default]) == [0])
        #expect(throws: LibraryError.libraryNotFound(gone)) { try store.versions(of: [jazz, gone]) }
        #expect(throws: LibraryError.libraryNotFound(LibraryID(rawValue: "never"))) {
            try store.versions(of: [LibraryID(rawValue: "never")])
        }
        #expect(store.isShared)
    }

    /// Two instances on one database: while one commits, threads of the other read versions at
    /// once. Every answer is at least the version the writer had acknowledged before the call
    /// (the reads are shared, never older), and the reads are fewer than the calls. A call whose
    /// request was cancelled before it asked is stopped, and reads nothing.
    @Test func sharedVersionReadsAreNeverOlderThanTheCallAndFewerThanTheCalls() throws {
        let url = try PostgresServer.shared().makeDatabase()
        let writer = try Self.store(url)
        let reader = try Self.store(url)
        let acknowledged = Atomic<Int64>(0)
        let stale = Mutex<[String]>([])
        let group = DispatchGroup()
        group.enter()
        Thread {
            for _ in 0..<150 {
                let version = try? writer.write(.default) { try $0.bumpVersion() }
                if let version { acknowledged.store(version, ordering: .sequentiallyConsistent) }
            }
            group.leave()
        }.start()
        for _ in 0..<6 {
            group.enter()
            Thread {
                for _ in 0..<300 {
                    let before = acknowledged.load(ordering: .sequentiallyConsistent)
                    do {
                        let read = try reader.versions(of: [.default])[0]
                        if read < before { stale.withLock { $0.append("\(read) < \(before)") } }
                    } catch {
                        stale.withLock { $0.append("\(error)") }
                    }
                }
                group.leave()
            }.start()
        }
        #expect(group.wait(timeout: .now() + 300) == .success)
        #expect(stale.withLock { $0 }.isEmpty)
        let statistics = reader.versionReadStatistics
        #expect(statistics.calls == 1_800)
        #expect(statistics.reads < statistics.calls, "\(statistics)")

        let cancelled = CancellationFlag()
        cancelled.cancel()
        #expect(throws: QueryInterrupted.self) {
            try QueryBudget.$current.withValue(QueryBudget(timeLimit: nil, cancellation: cancelled)) {
                try reader.versions(of: [.default])
            }
        }
        #expect(reader.versionReadStatistics.calls == 1_800, "a stopped call did not ask")
    }

    @Test func anAlbumIdHeldByAnotherLibraryIsAConflictNamingIt() throws {
        let store = try Self.store(try PostgresServer.shared().makeDatabase())
        let jazz = LibraryID(rawValue: "jazz")
        _ = try store.createLibrary(jazz, name: "Jazz")
        try store.write(jazz) { writer throws in try writer.insert(testAlbum(7), at: 0) }
        do {
            try store.write(.default) { writer throws in try writer.insert(testAlbum(7), at: 0) }
            Issue.record("the duplicate was accepted")
        } catch let LibraryError.conflict(message) {
            #expect(message.contains(testAlbum(7).id.rawValue) && message.contains("\"jazz\""), "\(message)")
        }
        #expect(try store.read(.default) { try $0.count() } == 0)
        _ = try store.checkConsistency(.default)
    }

    @Test func appendsAreSentInBatchesAndADuplicateAmongThemIsAConflictNamingIt() throws {
        // Buckets of 512: runs of 256 appends go as one statement.
        let store = try Self.store(try PostgresServer.shared().makeDatabase(), bucketSize: 512)
        let jazz = LibraryID(rawValue: "jazz")
        _ = try store.createLibrary(jazz, name: "Jazz")
        try store.write(jazz) { writer throws in try writer.insert(testAlbum(5000), at: 0) }
        let imported = (1...701).map { testAlbum(UInt64($0)) }
        try store.write(.default) { writer throws in
            try writer.deleteAllAlbums()
            for (index, album) in imported.enumerated() { try writer.insert(album, at: index) }
            #expect(try writer.count() == 701)
            #expect(try writer.album(at: 700) == imported[700], "queued rows are sent before a read")
            try writer.insert(testAlbum(800), at: 701)
            try writer.insert(testAlbum(801), at: 0)
        }
        let expected = [testAlbum(801)] + imported + [testAlbum(800)]
        #expect(try store.read(.default) { try $0.albums(offset: 0, limit: 1000) } == expected)
        #expect(try store.checkConsistency(.default).albumCount == 703)

        do {
            try store.write(.default) { writer throws in
                try writer.deleteAllAlbums()
                for number in 1...300 { try writer.insert(testAlbum(number == 150 ? 5000 : UInt64(2000 + number)), at: number - 1) }
            }
            Issue.record("the duplicate was accepted")
        } catch let LibraryError.conflict(message) {
            #expect(message.contains(testAlbum(5000).id.rawValue) && message.contains("\"jazz\""), "\(message)")
        }
        #expect(try store.read(.default) { try $0.albums(offset: 0, limit: 1000) } == expected, "nothing changed")
    }

    @Test func aStoppedServerFailsWithTheUnavailableErrorUnchangedAndServiceResumes() throws {
        let server = try PostgresServer()
        defer { try? server.stop() }
        let pool = PostgresPool(PostgresPool.Configuration(url: try server.makeDatabase(), size: 2, acquireTimeout: .seconds(1)))
        let store = try PostgresAlbumStore(pool: pool, configuration: PostgresAlbumStore.Configuration(bucketSize: 4))
        try store.write(.default) { writer throws in try writer.insert(testAlbum(1), at: 0) }

        try server.stop()
        for _ in 0..<3 {
            do {
                try store.write(.default) { writer throws in try writer.insert(testAlbum(2), at: 0) }
                Issue.record("a write succeeded with the server stopped")
            } catch let error as PostgresError {
                #expect(error.isUnavailable, "\(error)")
            }
        }

        try server.start()
        #expect(eventually(timeout: .seconds(15)) {
            (try? store.write(.default) { writer throws in try writer.insert(testAlbum(2), at: 0) }) != nil
        }, "writes resume once the server is back")
        #expect(try store.read(.default) { try $0.albums(offset: 0, limit: 5) } == [testAlbum(2), testAlbum(1)])
    }

    /// A write PostgreSQL aborts as a deadlock victim is run again (body included) and commits.
    /// The deadlock is made on purpose with another session: it holds a lock on `albums`
    /// that the write's insert waits for, then asks for the library row the write holds; the
    /// write waited first, so its deadlock check (after `deadlock_timeout`) fires first and
    /// aborts it — the other session's check is set to a minute.
    ///
    /// PostgreSQL's row locks are not queued fairly: when the victim rolls back, its second
    /// attempt can take the library row before the waiting session wakes, and the two then
    /// deadlock again (the second attempt is the victim, and its error is the write's: 503).
    /// That is the test's own session winning a race, not the retry failing, so the scenario
    /// is played again on a new library, at most three times.
    @Test func aWriteAbortedAsADeadlockVictimIsRunAgainAndCommits() throws {
        let url = try PostgresServer.shared().makeDatabase()
        let store = try Self.store(url)
        for round in 1...3 {
            let jazz = LibraryID(rawValue: "jazz\(round)")
            // Album ids are unique across libraries: each round adds its own two.
            let (first, second) = (testAlbum(UInt64(round * 10 + 1)), testAlbum(UInt64(round * 10 + 2)))
            _ = try store.createLibrary(jazz, name: "Jazz \(round)")
            try store.write(jazz) { writer throws in try writer.insert(first, at: 0) }
            let other = Self.deadlockingSession(url, library: jazz)
            var attempts = 0
            do {
                try store.write(jazz) { writer throws in
                    attempts += 1
                    try writer.insert(second, at: 0)
                    _ = try writer.bumpVersion()
                }
            } catch let error as PostgresError where error.kind == .deadlock && attempts == 2 && round < 3 {
                other.wait()
                continue  // the race above: play it again
            }
            other.wait()
            #expect(attempts == 2, "the first attempt was the deadlock's victim, the second committed")
            #expect(try store.read(jazz) { try $0.albums(offset: 0, limit: 5) } == [second, first])
            #expect(try store.versions(of: [jazz]) == [1])
            return
        }
    }

    /// Another session that locks `albums`, waits until a write waits for it, then asks for
    /// `library`'s row (held by that write) and commits once it has it. Returns once `albums`
    /// is locked, with a semaphore signalled when the session is done.
    static func deadlockingSession(_ url: String, library: LibraryID) -> DispatchSemaphore {
        let locked = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            defer { done.signal() }
            do {
                let session = try PostgresConnection(url: url)
                try session.execute("SET deadlock_timeout = '60s'")
                try session.execute("BEGIN; LOCK TABLE albums IN SHARE MODE")
                locked.signal()
                let observer = try PostgresConnection(url: url)
                let waiting = try eventually(timeout: .seconds(30), pollingEvery: .milliseconds(20)) {
                    try observer.scalar(
                        "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'albums'::regclass", as: Int.self) ?? 0 > 0
                }
                guard waiting else { throw PostgresError(kind: .other, message: "the write never waited for albums") }
                // Waits for the write's lock on the library row until the write is aborted.
                try session.run("SELECT 1 FROM libraries WHERE name = $1 FOR UPDATE", [.text(library.rawValue)])
                try session.execute("COMMIT")
            } catch {
                locked.signal()
                Issue.record("the other session failed: \(error)")
            }
        }
        thread.start()
        locked.wait()
        return done
    }

    @Test func onlyDeadlocksAndSerializationFailuresAreRetried() {
        #expect(PostgresAlbumStore.isWorthRetrying(PostgresError(sqlState: "40P01", message: "")))
        #expect(PostgresAlbumStore.isWorthRetrying(PostgresError(sqlState: "40001", message: "")))
        for state in ["23505", "57014", "08006", "22021", "42601"] {
            #expect(!PostgresAlbumStore.isWorthRetrying(PostgresError(sqlState: state, message: "")), "\(state)")
        }
        #expect(!PostgresAlbumStore.isWorthRetrying(LibraryError.undoStackEmpty))
        // Once, not more: a second deadlock is the caller's (503).
        var attempts = 0
        #expect(throws: PostgresError.self) {
            try PostgresAlbumStore.retryingOnce { () throws -> Void in
                attempts += 1
                throw PostgresError(sqlState: "40P01", message: "deadlock")
            }
        }
        #expect(attempts == 2)
    }

    /// PostgreSQL refuses text with a NUL character (22021), which SQLite stores: a client's
    /// error (`LibraryError.malformed`, 400), not a storage failure (500).
    @Test func textTheDatabaseRefusesIsMalformedInput() throws {
        let store = try Self.store(try PostgresServer.shared().makeDatabase())
        var album = testAlbum(1)
        album.title = "a\u{0}b"
        let refused = #expect(throws: LibraryError.self) {
            try store.write(.default) { writer throws in try writer.insert(album, at: 0) }
        }
        guard case let .malformed(message) = refused else {
            Issue.record("not malformed: \(String(describing: refused))")
            return
        }
        #expect(message.contains("cannot store"), "\(message)")
        let named = #expect(throws: LibraryError.self) {
            try store.createLibrary(LibraryID(rawValue: "ok"), name: "nul\u{0}name")
        }
        #expect(named?.code == "malformed", "\(String(describing: named))")
        #expect(try store.read(.default) { try $0.count() } == 0)
    }

    private static func store(_ url: String, bucketSize: Int = 4) throws -> PostgresAlbumStore {
        try PostgresAlbumStore(
            pool: PostgresPool(PostgresPool.Configuration(url: url, size: 2)),
            configuration: PostgresAlbumStore.Configuration(bucketSize: bucketSize))
    }

    /// Every notification that arrives within a short wait (sent at commit, so already there).
    private static func drain(_ listener: PostgresConnection) throws -> [PostgresNotification] {
        var all: [PostgresNotification] = []
        while case let batch = try listener.notifications(waitingUpTo: .milliseconds(300)), !batch.isEmpty {
            all += batch
        }
        return all
    }
}
