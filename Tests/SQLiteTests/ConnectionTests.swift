import Foundation
import HTTPTestSupport
import TestThreads
import Testing
@testable import SQLite

@Suite(.ownThreads) struct ConnectionTests {
    @Test func openCreatesFileAndReopenSeesData() throws {
        try withDatabasePath { path in
            do {
                let connection = try Connection(path: path)
                try connection.execute("CREATE TABLE t (x INTEGER)")
                try connection.run("INSERT INTO t VALUES (?)", [42])
                #expect(connection.lastInsertRowID == 1)
                #expect(connection.changes == 1)
            }
            #expect(FileManager.default.fileExists(atPath: path))
            // Closing the last connection checkpoints and deletes the WAL: deinit really closed it.
            #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
            let reopened = try Connection(path: path, mode: .readWrite)
            #expect(try reopened.scalar("SELECT x FROM t", as: Int.self) == 42)
        }
    }

    @Test func openFailureThrowsCantOpen() throws {
        try withTemporaryDirectory { directory in
            let missing = directory.appendingPathComponent("missing.sqlite").path
            #expect {
                _ = try Connection(path: missing, mode: .readOnly)
            } throws: { error in
                (error as? SQLiteError)?.code == 14 // SQLITE_CANTOPEN
            }
            #expect(throws: SQLiteError.self) {
                _ = try Connection(path: missing, mode: .readWrite)
            }
            #expect(!FileManager.default.fileExists(atPath: missing))
        }
    }

    @Test func openRejectsNonDatabaseFile() throws {
        try withDatabasePath { path in
            try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
            #expect {
                _ = try Connection(path: path)
            } throws: { error in
                (error as? SQLiteError)?.isCorrupt == true
            }
        }
    }

    @Test func setupPragmasAreApplied() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            #expect(try connection.scalar("PRAGMA journal_mode", as: String.self) == "wal")
            #expect(try connection.scalar("PRAGMA foreign_keys", as: Int.self) == 1)
            #expect(try connection.scalar("PRAGMA synchronous", as: Int.self) == 1) // NORMAL
            #expect(try connection.scalar("PRAGMA busy_timeout", as: Int.self) == 5000)
            try connection.execute("CREATE TABLE t (x)")
            #expect(FileManager.default.fileExists(atPath: path + "-wal"))
            try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            // File header bytes 18/19 (read/write format version) are 2 in WAL mode.
            let header = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)).prefix(20))
            #expect(header.count == 20 && header[18] == 2 && header[19] == 2)

            let full = try Connection(
                path: path,
                options: .init(synchronous: .full, busyTimeout: .milliseconds(250))
            )
            #expect(try full.scalar("PRAGMA synchronous", as: Int.self) == 2) // FULL
            #expect(try full.scalar("PRAGMA busy_timeout", as: Int.self) == 250)

            let reader = try Connection(path: path, mode: .readOnly)
            #expect(reader.isReadOnly)
            #expect(!connection.isReadOnly)
            #expect(try reader.scalar("PRAGMA journal_mode", as: String.self) == "wal")
        }
    }

    @Test func readOnlyConnectionRejectsWrites() throws {
        try withDatabasePath { path in
            let writer = try Connection(path: path)
            try writer.execute("CREATE TABLE t (x)")
            let reader = try Connection(path: path, mode: .readOnly)
            #expect {
                try reader.run("INSERT INTO t VALUES (1)")
            } throws: { error in
                (error as? SQLiteError)?.isReadOnly == true
            }
        }
    }

    @Test func executeRunsScriptsAndReportsErrors() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            try connection.execute("""
                CREATE TABLE a (x); CREATE TABLE b (y);
                INSERT INTO a VALUES (1); INSERT INTO b VALUES (2);
                """)
            #expect(try connection.scalar("SELECT (SELECT x FROM a) + (SELECT y FROM b)", as: Int.self) == 3)
            let script = "INSERT INTO a VALUES (3); INSERT INTO nope VALUES (4)"
            #expect {
                try connection.execute(script)
            } throws: { error in
                guard let error = error as? SQLiteError else { return false }
                return error.code == 1 && error.message.contains("no such table: nope") && error.sql == script
            }
        }
    }

    @Test func prepareRejectsMultipleStatementsButAllowsTrailingComment() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            #expect(throws: SQLiteError.self) {
                try connection.run("SELECT 1; SELECT 2")
            }
            #expect(try connection.scalar("SELECT 7; -- trailing comment", as: Int.self) == 7)
            #expect(try connection.scalar("SELECT 8;  ", as: Int.self) == 8)
        }
    }

    @Test func queryHelpersStreamAndMap() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            try connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
            try connection.transaction { db in
                for i in 1...100 {
                    try db.run("INSERT INTO t (id, name) VALUES (?, ?)", [.integer(Int64(i)), .text("n\(i)")])
                }
            }
            var sum = 0
            var count = 0
            try connection.forEachRow("SELECT id, name FROM t WHERE id > ?", [50]) { row in
                sum += try row.int(0)
                #expect(try row.string(1) == "n\(try row.int(0))")
                #expect(row.columnName(1) == "name")
                #expect(row.columnCount == 2)
                count += 1
            }
            #expect(count == 50)
            #expect(sum == (51...100).reduce(0, +))

            let names = try connection.query("SELECT name FROM t WHERE id <= 3 ORDER BY id") { try $0.string(0) }
            #expect(names == ["n1", "n2", "n3"])
            #expect(try connection.firstRow("SELECT name FROM t WHERE id = ?", [7]) { try $0.string(0) } == "n7")
            #expect(try connection.firstRow("SELECT name FROM t WHERE id = ?", [700]) { try $0.string(0) } == nil)
            #expect(try connection.scalar("SELECT count(*) FROM t", as: Int.self) == 100)
            #expect(try connection.scalar("SELECT id FROM t WHERE id < 0", as: Int.self) == nil)
            // A nullable scalar: Optional<Optional<T>>.
            #expect(try connection.scalar("SELECT NULL", as: Int?.self) == .some(nil))

            try connection.run("UPDATE t SET name = 'x' WHERE id <= 10")
            #expect(connection.changes == 10)
            #expect(connection.totalChanges == 110)
        }
    }

    @Test func reentrantUseOfSameSQLGetsFreshStatement() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            try connection.execute("CREATE TABLE t (x); INSERT INTO t VALUES (1), (2), (3);")
            let sql = "SELECT x FROM t ORDER BY x"
            var pairs: [String] = []
            try connection.forEachRow(sql) { outer in
                let a = try outer.int(0)
                try connection.forEachRow(sql) { inner in
                    pairs.append("\(a)\(try inner.int(0))")
                }
            }
            #expect(pairs == ["11", "12", "13", "21", "22", "23", "31", "32", "33"])
        }
    }

    @Test func explicitStatementAPI() throws {
        try withDatabasePath { path in
            let connection = try Connection(path: path)
            try connection.execute("CREATE TABLE t (x)")
            let insert = try connection.prepare("INSERT INTO t VALUES (?)")
            #expect(insert.parameterCount == 1)
            #expect(!insert.isReadOnly)
            for i in 0..<5 {
                try insert.bind([.integer(Int64(i))])
                #expect(try insert.step() == false)
                insert.reset()
            }
            let select = try connection.prepare("SELECT sum(x) FROM t")
            #expect(select.isReadOnly)
            #expect(try select.step())
            #expect(try select.row.int(0) == 10)
            #expect(try select.step() == false)
        }
    }
}
