import TestThreads
import Testing
@testable import SQLite

@Suite(.ownThreads) struct RowCursorTests {
    @Test func readsEveryRowInOrderThenNil() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            try connection.execute("CREATE TABLE t (x); INSERT INTO t VALUES (1), (2), (3)")
            var rows = try connection.cursor("SELECT x FROM t WHERE x >= ? ORDER BY x", [2])
            var seen: [Int] = []
            while let row = try rows.next() { seen.append(try row.int(0)) }
            #expect(seen == [2, 3])
            let afterEnd = try rows.next()
            #expect(afterEnd == nil)
        }
    }

    @Test func stoppingEarlyReturnsTheStatementToTheCache() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            try connection.execute("CREATE TABLE t (x); INSERT INTO t VALUES (1), (2), (3)")
            let sql = "SELECT x FROM t ORDER BY x"
            func first() throws -> Int? {
                var rows = try connection.cursor(sql)
                while let row = try rows.next() { return try row.int(0) }
                return nil
            }
            #expect(try first() == 1)
            let prepared = connection.preparedStatementCount
            #expect(try first() == 1) // reset, not left mid-scan
            #expect(connection.preparedStatementCount == prepared) // the cached statement again
            #expect(connection.cachedStatementCount == 1)
            // Not left holding a read: a write on the same connection commits.
            try connection.run("INSERT INTO t VALUES (4)")
            #expect(!connection.isInTransaction)
        }
    }

    @Test func theSameSQLInsideAnOpenCursorGetsAFreshStatement() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            try connection.execute("CREATE TABLE t (x); INSERT INTO t VALUES (1), (2)")
            let sql = "SELECT x FROM t ORDER BY x"
            var outer = try connection.cursor(sql)
            var pairs: [[Int]] = []
            while let row = try outer.next() {
                let x = try row.int(0)
                var inner = try connection.cursor(sql)
                while let other = try inner.next() { pairs.append([x, try other.int(0)]) }
            }
            #expect(pairs == [[1, 1], [1, 2], [2, 1], [2, 2]])
        }
    }

    @Test func aFailingStepIsThrownAndTheStatementEvicted() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            try connection.execute("CREATE TABLE t (x); INSERT INTO t VALUES (1), ('a')")
            // Fails on the second row only (malformed JSON).
            let sql = "SELECT CASE WHEN typeof(x) = 'text' THEN json(x) ELSE x END FROM t ORDER BY rowid"
            var rows = try connection.cursor(sql)
            let first = try rows.next()
            #expect(first != nil)
            var failed = false
            do { _ = try rows.next() } catch is SQLiteError { failed = true }
            #expect(failed)
            let afterFailure = try rows.next()
            #expect(afterFailure == nil)
            #expect(connection.cachedStatementCount == 0)
        }
    }

    @Test func aBindingErrorLeavesNothingInUse() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            try connection.execute("CREATE TABLE t (x)")
            #expect(throws: SQLiteError.self) { _ = try connection.cursor("SELECT x FROM t WHERE x = ?", []) }
            var rows = try connection.cursor("SELECT x FROM t WHERE x = ?", [1])
            let none = try rows.next()
            #expect(none == nil)
        }
    }
}
