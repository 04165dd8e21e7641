import Foundation
import Synchronization
import TestThreads
import Testing
@testable import SQLite

@Suite(.ownThreads) struct DatabaseTests {
    private static var migrator: Migrator {
        var migrator = Migrator()
        migrator.register("create") { db in
            try db.execute("""
                CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
                CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL);
                INSERT INTO accounts (id, balance) VALUES (1, 1000), (2, 0);
                """)
        }
        return migrator
    }

    @Test func writeCommitsAndReadSees() throws {
        try withDatabasePath { path in
            let database = try Database(path: path, migrator: Self.migrator)
            let id = try database.write { db -> Int64 in
                try db.run("INSERT INTO items (name) VALUES (?)", ["a"])
                return db.lastInsertRowID
            }
            #expect(id == 1)
            #expect(try database.read { try $0.scalar("SELECT name FROM items WHERE id = ?", [.integer(id)], as: String.self) } == "a")
        }
    }

    @Test func writeRollsBackOnThrow() throws {
        try withDatabasePath { path in
            let database = try Database(path: path, migrator: Self.migrator)
            #expect(throws: TestFailure.self) {
                try database.write { db in
                    try db.run("INSERT INTO items (name) VALUES ('gone')")
                    throw TestFailure(reason: "abort")
                }
            }
            #expect(try database.read { try $0.scalar("SELECT count(*) FROM items", as: Int.self) } == 0)
            // Writer still usable afterwards.
            try database.write { try $0.run("INSERT INTO items (name) VALUES ('kept')") }
            #expect(try database.read { try $0.scalar("SELECT count(*) FROM items", as: Int.self) } == 1)
        }
    }

    @Test func readersAreReadOnlyAndInsideATransaction() throws {
        try withDatabasePath { path in
            let database = try Database(path: path, migrator: Self.migrator)
            try database.read { db in
                #expect(db.isReadOnly)
                #expect(db.isInTransaction)
            }
            #expect {
                try database.read { try $0.run("INSERT INTO items (name) VALUES ('x')") }
            } throws: { error in
                (error as? SQLiteError)?.isReadOnly == true
            }
        }
    }

    @Test func writeWithoutTransactionAllowsVacuumAndPragmas() throws {
        try withDatabasePath { path in
            let database = try Database(path: path, migrator: Self.migrator)
            try database.writeWithoutTransaction { db in
                #expect(!db.isInTransaction)
                try db.execute("VACUUM")
                try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            }
        }
    }

    @Test func secondDatabaseAndReopenSeeCommittedData() throws {
        try withDatabasePath { path in
            do {
                let first = try Database(path: path, migrator: Self.migrator)
                try first.write { db in
                    try db.run("INSERT INTO items (name) VALUES (?)", ["durable"])
                }
                // A second Database on the same file while the first is open.
                let second = try Database(path: path, migrator: Self.migrator)
                #expect(try second.read { try $0.scalar("SELECT name FROM items", as: String.self) } == "durable")
                try second.write { try $0.run("INSERT INTO items (name) VALUES ('from second')") }
                #expect(try first.read { try $0.scalar("SELECT count(*) FROM items", as: Int.self) } == 2)
            }
            // Both closed (every connection, writer last, so the WAL was checkpointed away).
            #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
            // Reopen from disk.
            let reopened = try Database(path: path, migrator: Self.migrator)
            let names = try reopened.read { try $0.query("SELECT name FROM items ORDER BY id") { try $0.string(0) } }
            #expect(names == ["durable", "from second"])
        }
    }

    @Test func readSeesOneSnapshotWhileWriterCommits() throws {
        try withDatabasePath { path in
            let database = try Database(path: path, migrator: Self.migrator)
            try database.write { try $0.run("INSERT INTO items (name) VALUES ('before')") }
            let (counts, afterwards) = try database.read { db -> ([Int], Int) in
                let first = try db.scalar("SELECT count(*) FROM items", as: Int.self) ?? -1
                // Commit a write from another thread while this read transaction is open.
                let writer = TestThread {
                    try database.write { try $0.run("INSERT INTO items (name) VALUES ('during')") }
                    return try database.read { try $0.scalar("SELECT count(*) FROM items", as: Int.self) ?? -1 }
                }
                let seenByOthers = try writer.join()
                let second = try db.scalar("SELECT count(*) FROM items", as: Int.self) ?? -1
                return ([first, second], seenByOthers)
            }
            #expect(counts == [1, 1]) // same snapshot inside one read
            #expect(afterwards == 2) // the write was committed meanwhile
            #expect(try database.read { try $0.scalar("SELECT count(*) FROM items", as: Int.self) } == 2)
        }
    }

    @Test func concurrentReadersSeeConsistentTotalsDuringTransfers() throws {
        try withDatabasePath { path in
            let database = try Database(path: path, migrator: Self.migrator, configuration: .init(readerCount: 3))
            let transfers = 300
            let writer = TestThread {
                for _ in 0..<transfers {
                    try database.write { db in
                        try db.run("UPDATE accounts SET balance = balance - 1 WHERE id = 1")
                        try db.run("UPDATE accounts SET balance = balance + 1 WHERE id = 2")
                    }
                }
                return transfers
            }
            let readers = (0..<4).map { _ in
                TestThread { () -> Int in
                    var reads = 0
                    var done = false
                    while !done {
                        let (a, b) = try database.read { db in
                            // Two separate queries: only a shared snapshot keeps the sum right.
                            let a = try db.scalar("SELECT balance FROM accounts WHERE id = 1", as: Int.self) ?? -1
                            let b = try db.scalar("SELECT balance FROM accounts WHERE id = 2", as: Int.self) ?? -1
                            return (a, b)
                        }
                        guard a + b == 1000 else {
                            throw TestFailure(reason: "inconsistent snapshot \(a) + \(b)")
                        }
                        reads += 1
                        done = b == transfers
                    }
                    return reads
                }
            }
            #expect(try writer.join() == transfers)
            for reader in readers {
                #expect(try reader.join() > 0)
            }
            let final = try database.read { try $0.query("SELECT balance FROM accounts ORDER BY id") { try $0.int(0) } }
            #expect(final == [1000 - transfers, transfers])
        }
    }

    @Test func concurrentWritersAreSerialised() throws {
        try withDatabasePath { path in
            let database = try Database(path: path, migrator: Self.migrator)
            let threads = (0..<4).map { t in
                TestThread { () -> Int in
                    for i in 0..<50 {
                        try database.write { db in
                            let balance = try db.scalar("SELECT balance FROM accounts WHERE id = 2", as: Int.self) ?? 0
                            try db.run("UPDATE accounts SET balance = ? WHERE id = 2", [.integer(Int64(balance + 1))])
                            try db.run("INSERT INTO items (name) VALUES (?)", [.text("t\(t)-\(i)")])
                        }
                    }
                    return 50
                }
            }
            let total = try threads.reduce(0) { $0 + (try $1.join()) }
            #expect(total == 200)
            // Read-modify-write under the writer lock loses no updates.
            #expect(try database.read { try $0.scalar("SELECT balance FROM accounts WHERE id = 2", as: Int.self) } == 200)
            #expect(try database.read { try $0.scalar("SELECT count(*) FROM items", as: Int.self) } == 200)
        }
    }

    @Test func readerPoolWaitIsBounded() throws {
        try withDatabasePath { path in
            let database = try Database(
                path: path,
                migrator: Self.migrator,
                configuration: .init(readerCount: 1, readerTimeout: .milliseconds(200))
            )
            let holding = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let holder = TestThread {
                try database.read { _ in
                    holding.signal()
                    release.wait()
                }
                return true
            }
            holding.wait()
            let start = ContinuousClock.now
            let error = try #require(throws: SQLiteError.self) {
                try database.read { _ in }
            }
            let waited = ContinuousClock.now - start
            #expect(error.isBusy)
            #expect(waited >= .milliseconds(150))
            release.signal()
            #expect(try holder.join())
            // Free again.
            #expect(try database.read { try $0.scalar("SELECT 1", as: Int.self) } == 1)
        }
    }

    @Test func readerWaitsForAFreeConnection() throws {
        try withDatabasePath { path in
            let database = try Database(path: path, migrator: Self.migrator, configuration: .init(readerCount: 2))
            let active = Mutex((current: 0, peak: 0))
            let threads = (0..<6).map { _ in
                TestThread { () -> Bool in
                    for _ in 0..<10 {
                        try database.read { db in
                            active.withLock { $0.current += 1; $0.peak = max($0.peak, $0.current) }
                            _ = try db.scalar("SELECT count(*) FROM items", as: Int.self)
                            Thread.sleep(forTimeInterval: 0.002)  // a read that takes time, so readers overlap
                            active.withLock { $0.current -= 1 }
                        }
                    }
                    return true
                }
            }
            for thread in threads { #expect(try thread.join()) }
            #expect(active.withLock { $0.peak } <= 2)
        }
    }

    @Test func zeroReadersFallsBackToWriter() throws {
        try withDatabasePath { path in
            let database = try Database(path: path, migrator: Self.migrator, configuration: .init(readerCount: 0))
            try database.write { try $0.run("INSERT INTO items (name) VALUES ('w')") }
            #expect(try database.read { try $0.scalar("SELECT count(*) FROM items", as: Int.self) } == 1)
        }
    }
}
