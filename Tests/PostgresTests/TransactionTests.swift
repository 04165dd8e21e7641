import HTTPTestSupport
import Postgres
import TestThreads
import Testing

@Suite(.ownThreads) struct TransactionTests {
    private func makeTable() throws -> PostgresConnection {
        let connection = try makeConnection()
        try connection.execute("CREATE TABLE t (n bigint PRIMARY KEY)")
        return connection
    }

    private func count(_ connection: PostgresConnection) throws -> Int {
        try connection.scalar("SELECT count(*) FROM t", as: Int.self) ?? -1
    }

    @Test(arguments: [PostgresConnection.TransactionMode.readCommitted, .serializable])
    func commitsWhenTheBodyReturns(mode: PostgresConnection.TransactionMode) throws {
        let connection = try makeTable()
        let result = try connection.transaction(mode) { () -> Int in
            #expect(connection.isInTransaction)
            try connection.run("INSERT INTO t VALUES ($1)", [.integer(1)])
            try connection.run("INSERT INTO t VALUES ($1)", [.integer(2)])
            return 7
        }
        #expect(result == 7)
        #expect(!connection.isInTransaction)
        let other = try PostgresConnection(url: try currentURL(connection))
        #expect(try count(other) == 2)
    }

    @Test func aThrowingBodyRollsBackAndItsErrorComesOutUnchanged() throws {
        let connection = try makeTable()
        #expect(throws: TestFailure(reason: "boom")) {
            try connection.transaction(.readCommitted) {
                try connection.run("INSERT INTO t VALUES ($1)", [.integer(1)])
                throw TestFailure(reason: "boom")
            }
        }
        #expect(!connection.isInTransaction)
        #expect(try count(connection) == 0)
    }

    @Test func aFailingStatementRollsBackWithItsError() throws {
        let connection = try makeTable()
        let error = postgresError {
            try connection.transaction(.readCommitted) {
                try connection.run("INSERT INTO t VALUES ($1)", [.integer(1)])
                try connection.run("INSERT INTO t VALUES ($1)", [.integer(1)])
            }
        }
        #expect(error?.kind == .uniqueViolation)
        #expect(!connection.isInTransaction)
        #expect(try count(connection) == 0)
    }

    @Test func aCaughtStatementErrorCannotCommit() throws {
        let connection = try makeTable()
        let error = postgresError {
            try connection.transaction(.readCommitted) {
                try connection.run("INSERT INTO t VALUES ($1)", [.integer(1)])
                _ = try? connection.run("INSERT INTO t VALUES ($1)", [.integer(1)])
            }
        }
        #expect(error?.kind == .other)
        #expect(!connection.isInTransaction)
        #expect(try count(connection) == 0)
    }

    @Test func nestedTransactionsAreSavepoints() throws {
        let connection = try makeTable()
        try connection.transaction(.readCommitted) {
            try connection.run("INSERT INTO t VALUES (1)")
            #expect(throws: TestFailure(reason: "inner")) {
                try connection.transaction(.readCommitted) {
                    try connection.run("INSERT INTO t VALUES (2)")
                    throw TestFailure(reason: "inner")
                }
            }
            // A failed statement inside the savepoint leaves the outer transaction usable.
            _ = postgresError {
                try connection.transaction(.readCommitted) { try connection.run("INSERT INTO t VALUES (1)") }
            }
            try connection.transaction(.readCommitted) { try connection.run("INSERT INTO t VALUES (3)") }
        }
        #expect(try connection.query("SELECT n FROM t ORDER BY n") { try $0.int(0) } == [1, 3])
    }

    @Test func aReadOnlyTransactionRefusesWritesAndSeesOneSnapshot() throws {
        let connection = try makeTable()
        let writer = try PostgresConnection(url: try currentURL(connection))
        #expect(throws: TestFailure(reason: "done")) {
            try connection.transaction(.repeatableReadReadOnly) {
                #expect(try count(connection) == 0)
                try writer.run("INSERT INTO t VALUES (1)")
                #expect(try count(connection) == 0)
                #expect(postgresError { try connection.run("INSERT INTO t VALUES (2)") }?.sqlState == "25006")
                throw TestFailure(reason: "done")
            }
        }
        #expect(try count(connection) == 1)
    }

    @Test func aConcurrentUpdateFailsASerializableTransaction() throws {
        let connection = try makeTable()
        try connection.run("INSERT INTO t VALUES (1)")
        let other = try PostgresConnection(url: try currentURL(connection))
        let error = postgresError {
            try connection.transaction(.serializable) {
                #expect(try count(connection) == 1)
                try other.run("UPDATE t SET n = 2 WHERE n = 1")
                try connection.run("UPDATE t SET n = 3 WHERE n = 1")
            }
        }
        #expect(error?.kind == .serialization)
        #expect(!connection.isInTransaction)
        #expect(try connection.scalar("SELECT n FROM t", as: Int.self) == 2)
    }
}
