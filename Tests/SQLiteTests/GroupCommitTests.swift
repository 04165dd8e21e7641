import Dispatch
import Foundation
import HTTPTestSupport
import Synchronization
import TestThreads
import Testing
@testable import SQLite

/// Group commit (`Database.write`): writes queued behind a busy writer share one transaction,
/// each under its own savepoint, in the order they queued.
@Suite(.ownThreads) struct GroupCommitTests {
    private static var migrator: Migrator {
        var migrator = Migrator()
        migrator.register("create") { db in
            try db.execute("CREATE TABLE log (seq INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE)")
        }
        return migrator
    }

    private static func open(_ path: String, maxBatch: Int = 64, synchronous: Connection.Synchronous = .normal) throws -> Database {
        try Database(path: path, migrator: migrator, configuration: Database.Configuration(
            connection: Connection.Options(synchronous: synchronous), readerCount: 2, maxBatch: maxBatch))
    }

    /// Holds the writer inside a write until `release()`: writes started meanwhile queue up.
    final class HeldWriter: Sendable {
        private let entered = DispatchSemaphore(value: 0)
        private let gate = DispatchSemaphore(value: 0)
        private let thread: TestThread<Void>

        init(_ database: Database) {
            thread = TestThread { [entered, gate] in
                try database.write { db in
                    try db.run("INSERT INTO log (name) VALUES ('holder')")
                    entered.signal()
                    gate.wait()
                }
            }
            entered.wait()
        }

        func release() throws {
            gate.signal()
            try thread.join()
        }
    }

    /// Starts one write per name, each queued behind the held writer before the next starts
    /// (so the queue order is the order of `names`); a name in `failing` inserts its row and
    /// then throws.
    private static func queueWrites(_ names: [String], failing: Set<String> = [], raw: [String: String] = [:],
                                    on database: Database) throws -> [TestThread<Int64>] {
        var threads: [TestThread<Int64>] = []
        for (position, name) in names.enumerated() {
            threads.append(TestThread {
                try database.write { db -> Int64 in
                    try db.run("INSERT INTO log (name) VALUES (?)", [.text(name)])
                    if let sql = raw[name] { try db.run(sql) }
                    if failing.contains(name) { throw TestFailure(reason: name) }
                    return db.lastInsertRowID
                }
            })
            #expect(eventually { database.queuedWriteCount == position + 1 }, "write \(name) queued")
        }
        return threads
    }

    private static func names(_ database: Database) throws -> [String] {
        try database.read { db in try db.query("SELECT name FROM log ORDER BY seq") { try $0.string(0) } }
    }

    @Test(arguments: [Connection.Synchronous.normal, .full])
    func queuedWritesCommitTogetherInOrderAndAFailingOneFailsAlone(_ synchronous: Connection.Synchronous) throws {
        try withDatabasePath { path in
            let database = try Self.open(path, synchronous: synchronous)
            let holder = HeldWriter(database)
            let threads = try Self.queueWrites(["a", "b", "c", "d", "e"], failing: ["c"], on: database)
            try holder.release()
            var outcomes: [String] = []
            for thread in threads {
                do { outcomes.append("ok \(try thread.join())") } catch let failure as TestFailure { outcomes.append("failed \(failure.reason)") }
            }
            // Each write saw its own row id, in queue order; the failing one rolled back alone,
            // its row id too (as if it had run in a transaction of its own).
            #expect(outcomes == ["ok 2", "ok 3", "failed c", "ok 4", "ok 5"])
            #expect(try Self.names(database) == ["holder", "a", "b", "d", "e"])
            let statistics = database.groupCommitStatistics
            #expect(statistics.transactions == 2, "the holder alone, then one transaction for the five")
            #expect(statistics.jobs == 6)
            #expect(statistics.largestBatch == 5)
            #expect(statistics.walFramesWritten > 0)
        }
    }

    @Test func aBatchNeverExceedsMaxBatch() throws {
        try withDatabasePath { path in
            let database = try Self.open(path, maxBatch: 3)
            let holder = HeldWriter(database)
            let names = (0..<7).map { "w\($0)" }
            let threads = try Self.queueWrites(names, on: database)
            try holder.release()
            for thread in threads { _ = try thread.join() }
            #expect(try Self.names(database) == ["holder"] + names)
            let statistics = database.groupCommitStatistics
            #expect(statistics.largestBatch == 3)
            #expect(statistics.transactions == 4, "holder, then 3 + 3 + 1")
        }
    }

    @Test func aWriteWithoutTransactionIsNeverBatched() throws {
        try withDatabasePath { path in
            let database = try Self.open(path)
            let holder = HeldWriter(database)
            let first = try Self.queueWrites(["before"], on: database)
            let exclusive = TestThread {
                try database.writeWithoutTransaction { db -> Bool in db.isInTransaction }
            }
            #expect(eventually { database.queuedWriteCount == 2 }, "exclusive write queued")
            let after = TestThread { try database.write { db -> Int64 in
                try db.run("INSERT INTO log (name) VALUES ('after')")
                return db.lastInsertRowID
            } }
            #expect(eventually { database.queuedWriteCount == 3 }, "last write queued")
            try holder.release()
            _ = try first[0].join()
            #expect(try exclusive.join() == false, "it runs outside any transaction")
            _ = try after.join()
            #expect(try Self.names(database) == ["holder", "before", "after"])
            #expect(database.groupCommitStatistics.transactions == 3, "the batch stops before the exclusive write")
        }
    }

    /// `writeAlone` (an import) gets a transaction of its own, without a savepoint.
    @Test func aWriteAloneIsNeverBatched() throws {
        try withDatabasePath { path in
            let database = try Self.open(path)
            let holder = HeldWriter(database)
            let first = try Self.queueWrites(["before"], on: database)
            let alone = TestThread { try database.writeAlone { db -> Int64 in
                try db.run("INSERT INTO log (name) VALUES ('alone')")
                return db.lastInsertRowID
            } }
            #expect(eventually { database.queuedWriteCount == 2 }, "write alone queued")
            let after = TestThread { try database.write { db -> Int64 in
                try db.run("INSERT INTO log (name) VALUES ('after')")
                return db.lastInsertRowID
            } }
            #expect(eventually { database.queuedWriteCount == 3 }, "last write queued")
            try holder.release()
            _ = try first[0].join()
            #expect(try alone.join() == 3)
            _ = try after.join()
            #expect(try Self.names(database) == ["holder", "before", "alone", "after"])
            let statistics = database.groupCommitStatistics
            #expect(statistics.transactions == 4, "holder, before, alone, after: each its own")
            #expect(statistics.largestBatch == 1)
        }
    }

    /// When SQLite ends the whole transaction midway (here a body's raw ROLLBACK stands in for a
    /// full disk), the writes that had run fail too (nothing of them was committed; `b`'s own
    /// failure, decided against `a`'s uncommitted writes, is replaced by the transaction's error)
    /// and the ones not yet run go on in the next transaction.
    @Test func aTransactionLostMidwayFailsWhatRanAndRunsTheRestAgain() throws {
        try withDatabasePath { path in
            let database = try Self.open(path)
            let holder = HeldWriter(database)
            let names = ["a", "b", "c", "d", "e"]
            let threads = try Self.queueWrites(names, failing: ["b"], raw: ["c": "ROLLBACK"], on: database)
            try holder.release()
            var outcomes: [String] = []
            for (name, thread) in zip(names, threads) {
                do {
                    _ = try thread.join()
                    outcomes.append("\(name) ok")
                } catch is TestFailure {
                    outcomes.append("\(name) own failure")
                } catch {
                    outcomes.append("\(name) lost")
                }
            }
            #expect(outcomes == ["a lost", "b lost", "c lost", "d ok", "e ok"])
            #expect(try Self.names(database) == ["holder", "d", "e"])
        }
    }

    /// A job that fails before any other succeeded keeps its own error when the batch commits.
    @Test func aFailureBeforeAnySuccessKeepsItsOwnError() throws {
        try withDatabasePath { path in
            let database = try Self.open(path)
            let holder = HeldWriter(database)
            let threads = try Self.queueWrites(["x", "y"], failing: ["x"], on: database)
            try holder.release()
            #expect(throws: TestFailure(reason: "x")) { try threads[0].join() }
            _ = try threads[1].join()
            #expect(try Self.names(database) == ["holder", "y"])
        }
    }

    @Test func oneWriterAloneCommitsAtOnce() throws {
        try withDatabasePath { path in
            let database = try Self.open(path)
            for n in 0..<3 {
                _ = try database.write { db in try db.run("INSERT INTO log (name) VALUES (?)", [.text("n\(n)")]) }
            }
            #expect(database.groupCommitStatistics == GroupCommitStatistics(
                transactions: 3, jobs: 3, largestBatch: 1, walFramesWritten: database.groupCommitStatistics.walFramesWritten))
            #expect(database.queuedWriteCount == 0)
        }
    }
}
