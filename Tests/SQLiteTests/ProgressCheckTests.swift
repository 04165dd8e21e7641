import Essentials
import Foundation
import TestThreads
import Testing
@testable import SQLite

/// SQLite's progress handler, wrapped once (`Connection.withProgressCheck`), and reads that obey
/// the thread's `QueryBudget`: a query that would never end is stopped by a time limit or by a
/// cancellation, and says which.
@Suite(.ownThreads, .timeLimit(.minutes(1))) struct ProgressCheckTests {
    /// Counts for ever: only a stop ends it (the suite's time limit fails the test otherwise).
    static let endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"

    private static var migrator: Migrator {
        var migrator = Migrator()
        migrator.register("create") { db in try db.execute("CREATE TABLE items (id INTEGER PRIMARY KEY)") }
        return migrator
    }

    @Test func aProgressCheckThatSaysStopInterruptsTheStatement() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            nonisolated(unsafe) var asked = 0
            let error = #expect(throws: SQLiteError.self) {
                try connection.withProgressCheck(every: 1000, {
                    asked += 1
                    return asked >= 3
                }) { db in try db.scalar(Self.endless, as: Int.self) }
            }
            #expect(error?.isInterrupted == true, "\(String(describing: error))")
            #expect(asked == 3)
            // The handler is gone: the connection works as before.
            #expect(try connection.scalar("SELECT 41 + 1", as: Int.self) == 42)
        }
    }

    @Test func aBodyThatSwallowsTheStopStillFails() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            #expect(throws: SQLiteError.self) {
                try connection.withProgressCheck(every: 1000, { true }) { db in
                    _ = try? db.scalar(Self.endless, as: Int.self)
                    return 1
                }
            }
        }
    }

    @Test func aReadPastItsTimeLimitIsStopped() throws {
        try withDatabasePath { path in
            let database = try Database(path: path, migrator: Self.migrator)
            let counters = QueryInterruptionCounters()
            let budget = QueryBudget(timeLimit: .milliseconds(20), cancellation: CancellationFlag(), counters: counters)
            let error = #expect(throws: QueryInterrupted.self) {
                try QueryBudget.$current.withValue(budget) {
                    try database.read { db in try db.scalar(Self.endless, as: Int.self) }
                }
            }
            #expect(error?.reason == .timeLimit(.milliseconds(20)))
            #expect(counters.timedOut == 1 && counters.cancelled == 0)
            // The reader is back in the pool and works without a budget.
            #expect(try database.read { try $0.scalar("SELECT count(*) FROM items", as: Int.self) } == 0)
        }
    }

    @Test func aCancelledReadStopsMidQuery() throws {
        try withDatabasePath { path in
            let database = try Database(path: path, migrator: Self.migrator)
            let counters = QueryInterruptionCounters()
            let flag = CancellationFlag()
            let budget = QueryBudget(timeLimit: nil, cancellation: flag, counters: counters)
            let canceller = TestThread<Void> {
                usleep(50_000)  // not a measurement: the query runs until the flag is set, whenever
                flag.cancel()
            }
            let error = #expect(throws: QueryInterrupted.self) {
                try QueryBudget.$current.withValue(budget) {
                    try database.read { db in try db.scalar(Self.endless, as: Int.self) }
                }
            }
            try canceller.join()
            #expect(error?.reason == .cancelled)
            #expect(counters.cancelled == 1 && counters.timedOut == 0)
        }
    }

    @Test func aReadWhoseRequestWasCancelledDoesNotStart() throws {
        try withDatabasePath { path in
            let database = try Database(path: path, migrator: Self.migrator)
            let counters = QueryInterruptionCounters()
            let flag = CancellationFlag()
            flag.cancel()
            nonisolated(unsafe) var ran = false
            #expect(throws: QueryInterrupted(reason: .cancelled)) {
                try QueryBudget.$current.withValue(QueryBudget(timeLimit: nil, cancellation: flag, counters: counters)) {
                    try database.read { _ in ran = true }
                }
            }
            #expect(!ran && counters.cancelled == 1)
        }
    }

    @Test func aReadWithinItsBudgetIsUntouched() throws {
        try withDatabasePath { path in
            let database = try Database(path: path, migrator: Self.migrator)
            try database.write { db in
                for id in 1...100 { try db.run("INSERT INTO items (id) VALUES (?)", [.integer(Int64(id))]) }
            }
            let budget = QueryBudget(timeLimit: .seconds(60), cancellation: CancellationFlag())
            let count = try QueryBudget.$current.withValue(budget) {
                try database.read { try $0.scalar("SELECT sum(id) FROM items", as: Int.self) }
            }
            #expect(count == 5050)
        }
    }
}
