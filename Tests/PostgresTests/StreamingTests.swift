import Postgres
import TestThreads
import Testing

@Suite(.ownThreads) struct StreamingTests {
    @Test func forEachRowVisitsEveryRowInOrder() throws {
        let connection = try makeConnection()
        var count = 0
        var sum: Int64 = 0
        var inOrder = true
        try connection.forEachRow("SELECT n, repeat('x', 100) FROM generate_series(1, $1) AS n", [.integer(100_000)]) { row in
            let n = try row.int64(0)
            count += 1
            sum += n
            if n != Int64(count) { inOrder = false }
        }
        #expect(count == 100_000)
        #expect(sum == 100_000 * 100_001 / 2)
        #expect(inOrder)
    }

    /// Rows reach the body as the server produces them: a statement that fails on its last row
    /// has delivered every row before it (a whole-result read would deliver none).
    @Test func rowsArriveBeforeTheStatementFinishes() throws {
        let connection = try makeConnection()
        var delivered = 0
        let error = postgresError {
            try connection.forEachRow("SELECT 1 / ($1 - n) FROM generate_series(1, $1) AS n", [.integer(100_000)]) { _ in
                delivered += 1
            }
        }
        #expect(error?.sqlState == "22012")
        #expect(delivered == 99_999)
        #expect(try connection.scalar("SELECT 2", as: Int.self) == 2)
    }

    @Test func aThrowingBodyStopsAndTheConnectionStaysUsable() throws {
        let connection = try makeConnection()
        var seen = 0
        #expect(throws: TestFailure(reason: "enough")) {
            try connection.forEachRow("SELECT n FROM generate_series(1, 1000) AS n") { row in
                seen += 1
                if try row.int(0) == 10 { throw TestFailure(reason: "enough") }
            }
        }
        #expect(seen == 10)
        #expect(!connection.isBroken)
        #expect(try connection.scalar("SELECT 3", as: Int.self) == 3)
    }

    @Test func aStatementInsideTheBodyIsRefused() throws {
        let connection = try makeConnection()
        var inner: PostgresError?
        try connection.forEachRow("SELECT 1") { _ in
            inner = postgresError { try connection.run("SELECT 2") }
        }
        #expect(inner?.kind == .other)
        #expect(try connection.scalar("SELECT 4", as: Int.self) == 4)
    }

    @Test func anEmptyResultCallsNothing() throws {
        let connection = try makeConnection()
        var calls = 0
        try connection.forEachRow("SELECT 1 WHERE false") { _ in calls += 1 }
        #expect(calls == 0)
    }
}
