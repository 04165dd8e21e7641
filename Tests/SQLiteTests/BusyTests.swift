import Foundation
import TestThreads
import Testing
@testable import SQLite

@Suite(.ownThreads) struct BusyTests {
    @Test func competingWriterGetsBusyAfterTimeout() throws {
        try withDatabasePath { path in
            let holder = try Connection(path: path)
            try holder.execute("CREATE TABLE t (x)")
            let impatient = try Connection(path: path, options: .init(busyTimeout: .milliseconds(100)))
            try holder.run("BEGIN IMMEDIATE")
            let start = ContinuousClock.now
            let error = try #require(throws: SQLiteError.self) {
                try impatient.transaction(.immediate) { db in try db.run("INSERT INTO t VALUES (1)") }
            }
            #expect(error.isBusy)
            #expect(ContinuousClock.now - start >= .milliseconds(90))
            #expect(!impatient.isInTransaction)
            try holder.run("COMMIT")
            try impatient.transaction(.immediate) { db in try db.run("INSERT INTO t VALUES (1)") }
            #expect(try holder.scalar("SELECT count(*) FROM t", as: Int.self) == 1)
        }
    }

    @Test func busyTimeoutWaitsForTheLockToBeReleased() throws {
        try withDatabasePath { path in
            let setup = try Connection(path: path)
            try setup.execute("CREATE TABLE t (x)")
            let locked = DispatchSemaphore(value: 0)
            let holderThread = TestThread { () -> Bool in
                let holder = try Connection(path: path)
                try holder.transaction(.immediate) { db in
                    try db.run("INSERT INTO t VALUES ('holder')")
                    locked.signal()
                    Thread.sleep(forTimeInterval: 0.3)  // a slow holder (the behaviour under test), not a wait
                }
                return true
            }
            locked.wait()
            let patient = try Connection(path: path, options: .init(busyTimeout: .seconds(5)))
            try patient.transaction(.immediate) { db in try db.run("INSERT INTO t VALUES ('patient')") }
            #expect(try holderThread.join())
            let values = try patient.query("SELECT x FROM t ORDER BY rowid") { try $0.string(0) }
            #expect(values == ["holder", "patient"])
        }
    }
}
