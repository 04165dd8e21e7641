import TestThreads
import Testing
@testable import SQLite

@Suite(.ownThreads) struct StatementCacheTests {
    @Test func repeatedSQLIsPreparedOnce() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            try connection.execute("CREATE TABLE t (x)")
            let before = connection.preparedStatementCount
            for i in 0..<50 {
                try connection.run("INSERT INTO t VALUES (?)", [.integer(Int64(i))])
            }
            #expect(connection.preparedStatementCount == before + 1)
            for _ in 0..<10 {
                _ = try connection.scalar("SELECT count(*) FROM t", as: Int.self)
                try connection.forEachRow("SELECT x FROM t WHERE x < ?", [3]) { _ in }
            }
            #expect(connection.preparedStatementCount == before + 3)
            #expect(connection.cachedStatementCount == 3)
            #expect(try connection.scalar("SELECT count(*) FROM t", as: Int.self) == 50)
        }
    }

    @Test func failingStatementIsEvicted() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            try connection.execute("CREATE TABLE t (x UNIQUE)")
            let sql = "INSERT INTO t VALUES (?)"
            try connection.run(sql, [1])
            let prepared = connection.preparedStatementCount
            try connection.run(sql, [2])
            #expect(connection.preparedStatementCount == prepared) // cache hit
            #expect(throws: SQLiteError.self) { try connection.run(sql, [1]) }
            #expect(connection.cachedStatementCount == 0)
            try connection.run(sql, [3]) // prepared again
            #expect(connection.preparedStatementCount == prepared + 1)
            #expect(try connection.scalar("SELECT count(*) FROM t", as: Int.self) == 3)
        }
    }

    @Test func schemaChangesClearTheCache() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            try connection.run("CREATE TABLE t (x)")
            try connection.run("INSERT INTO t VALUES (1)")
            _ = try connection.scalar("SELECT x FROM t", as: Int.self)
            #expect(connection.cachedStatementCount == 2)
            try connection.run("  alter TABLE t ADD COLUMN y DEFAULT 5")
            #expect(connection.cachedStatementCount == 0)
            #expect(try connection.firstRow("SELECT * FROM t") { $0.columnCount } == 2)
            _ = try connection.scalar("SELECT x FROM t", as: Int.self)
            try connection.execute("CREATE INDEX t_x ON t (x)")
            #expect(connection.cachedStatementCount == 0)
        }
    }

    @Test func schemaChangeDetection() {
        #expect(Connection.isSchemaChange("CREATE TABLE x (a)"))
        #expect(Connection.isSchemaChange("\n  drop index i"))
        #expect(Connection.isSchemaChange("Alter table t rename to u"))
        #expect(!Connection.isSchemaChange("SELECT 1"))
        #expect(!Connection.isSchemaChange("CREATED"))
        #expect(!Connection.isSchemaChange("INSERT INTO create_log VALUES (1)"))
        #expect(!Connection.isSchemaChange(""))
    }

    @Test func boundedCacheFlushesWhenFull() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path, options: .init(statementCacheCapacity: 4))
            for i in 0..<10 {
                _ = try connection.scalar("SELECT \(i)", as: Int.self)
                #expect(connection.cachedStatementCount <= 4)
            }
        }
    }
}
