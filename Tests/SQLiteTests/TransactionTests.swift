import TestThreads
import Testing
@testable import SQLite

@Suite(.ownThreads) struct TransactionTests {
    private func makeConnection(_ path: String) throws -> Connection {
        let connection = try Connection(path: path)
        try connection.execute("CREATE TABLE t (x INTEGER)")
        return connection
    }

    private func count(_ connection: Connection) throws -> Int {
        try connection.scalar("SELECT count(*) FROM t", as: Int.self) ?? -1
    }

    @Test(arguments: [TransactionKind.deferred, .immediate, .exclusive])
    func commitsWhenBodyReturns(kind: TransactionKind) throws {
        try withDatabasePath { path in
            let connection = try makeConnection(path)
            let result = try connection.transaction(kind) { db -> Int in
                #expect(db.isInTransaction)
                try db.run("INSERT INTO t VALUES (1)")
                try db.run("INSERT INTO t VALUES (2)")
                return 7
            }
            #expect(result == 7)
            #expect(!connection.isInTransaction)
            // Visible from another connection: really committed.
            let other = try Connection(path: path)
            #expect(try count(other) == 2)
        }
    }

    @Test func rollsBackWhenBodyThrows() throws {
        try withDatabasePath { path in
            let connection = try makeConnection(path)
            #expect(throws: TestFailure(reason: "boom")) {
                try connection.transaction(.immediate) { db in
                    try db.run("INSERT INTO t VALUES (1)")
                    throw TestFailure(reason: "boom")
                }
            }
            #expect(!connection.isInTransaction)
            #expect(try count(connection) == 0)
        }
    }

    @Test func rollsBackWhenAStatementFails() throws {
        try withDatabasePath { path in
            let connection = try makeConnection(path)
            #expect(throws: SQLiteError.self) {
                try connection.transaction { db in
                    try db.run("INSERT INTO t VALUES (1)")
                    try db.run("INSERT INTO missing VALUES (1)")
                }
            }
            #expect(try count(connection) == 0)
        }
    }

    @Test func nestedTransactionsUseSavepoints() throws {
        try withDatabasePath { path in
            let connection = try makeConnection(path)
            try connection.transaction { db in
                try db.run("INSERT INTO t VALUES (1)")
                // Inner failure rolls back only the inner work.
                #expect(throws: TestFailure.self) {
                    try db.transaction { inner in
                        try inner.run("INSERT INTO t VALUES (2)")
                        try inner.transaction { innermost in
                            try innermost.run("INSERT INTO t VALUES (3)")
                        }
                        throw TestFailure(reason: "inner")
                    }
                }
                #expect(db.isInTransaction)
                try db.transaction { inner in
                    try inner.run("INSERT INTO t VALUES (4)")
                }
            }
            let values = try connection.query("SELECT x FROM t ORDER BY x") { try $0.int(0) }
            #expect(values == [1, 4])

            // Outer failure rolls back the released inner savepoint too.
            #expect(throws: TestFailure.self) {
                try connection.transaction { db in
                    try db.transaction { inner in try inner.run("INSERT INTO t VALUES (5)") }
                    throw TestFailure(reason: "outer")
                }
            }
            #expect(try count(connection) == 2)
        }
    }
}
