import Postgres
import TestThreads
import Testing

@Suite(.ownThreads) struct StatementCacheTests {
    @Test func aStatementIsPreparedOncePerTextAndParameterTypes() throws {
        let connection = try makeConnection()
        let before = connection.preparedStatementCount
        for n in 0..<5 {
            #expect(try connection.scalar("SELECT $1 + 1", [.integer(Int64(n))], as: Int.self) == n + 1)
        }
        #expect(connection.preparedStatementCount == before + 1)
        #expect(try connection.scalar("SELECT $1 + 1", [.real(0.5)], as: Double.self) == 1.5)
        #expect(try connection.scalar("SELECT $1 + 1", [.null], as: Int?.self) == .some(nil))
        #expect(connection.preparedStatementCount == before + 3)
        #expect(try connection.scalar("SELECT $1 + 1", [.integer(9)], as: Int.self) == 10)
        #expect(connection.preparedStatementCount == before + 3)
    }

    @Test func aStatementWhoseResultChangedShapeIsPreparedAgain() throws {
        let connection = try makeConnection()
        try connection.execute("CREATE TABLE t (a bigint); INSERT INTO t VALUES (1)")
        #expect(try connection.firstRow("SELECT * FROM t") { $0.columnCount } == 1)
        try connection.execute("ALTER TABLE t ADD COLUMN b text DEFAULT 'x'")
        #expect(try connection.firstRow("SELECT * FROM t") { $0.columnCount } == 2)
        #expect(try connection.firstRow("SELECT * FROM t") { try $0.string(1) } == "x")
    }

    @Test func statementsDroppedByAScriptArePreparedAgain() throws {
        let connection = try makeConnection()
        #expect(try connection.scalar("SELECT 1", as: Int.self) == 1)
        try connection.execute("DEALLOCATE ALL")
        #expect(connection.cachedStatementCount == 0)
        #expect(try connection.scalar("SELECT 1", as: Int.self) == 1)
    }

    @Test func theCacheIsBounded() throws {
        let connection = try makeConnection()
        let count = PostgresConnection.statementCacheCapacity + 10
        for n in 0..<count {
            #expect(try connection.scalar("SELECT \(n)", as: Int.self) == n)
        }
        #expect(connection.cachedStatementCount <= PostgresConnection.statementCacheCapacity)
        #expect(try connection.scalar("SELECT count(*) FROM pg_prepared_statements", as: Int.self) ?? .max <= PostgresConnection.statementCacheCapacity)
    }
}
