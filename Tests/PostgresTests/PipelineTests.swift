import HTTPTestSupport
import Postgres
import TestThreads
import Testing

/// `runLater`: queued statements go with the next one, in one round trip (libpq's pipeline
/// mode), in order, and never after a rollback.
@Suite(.ownThreads) struct PipelineTests {
    private func makeTable() throws -> PostgresConnection {
        let connection = try makeConnection()
        try connection.execute("CREATE TABLE t (n bigint PRIMARY KEY, note text)")
        return connection
    }

    private func numbers(_ connection: PostgresConnection) throws -> [Int64] {
        try connection.query("SELECT n FROM t ORDER BY n") { try $0.get(0, as: Int64.self) }
    }

    @Test func aWriteTransactionIsOneRoundTripForItsBeginWritesAndCommit() throws {
        let connection = try makeTable()
        // Prepare the statement first, so the count below is of the pipeline alone.
        try connection.run("INSERT INTO t VALUES ($1, $2)", [.integer(0), .text("warm")])
        let before = connection.roundTrips
        try connection.transaction(.readCommitted) {
            for n in 1...5 { connection.runLater("INSERT INTO t VALUES ($1, $2)", [.integer(Int64(n)), .text("queued")]) }
            #expect(connection.queuedStatementCount == 6)  // BEGIN and the five inserts
        }
        #expect(connection.roundTrips == before + 1)
        #expect(connection.queuedStatementCount == 0)
        #expect(!connection.isInTransaction)
        let other = try PostgresConnection(url: try currentURL(connection))
        #expect(try numbers(other) == [0, 1, 2, 3, 4, 5])
    }

    @Test func queuedStatementsRunBeforeTheStatementThatSendsThemAndItsAnswerComesBack() throws {
        let connection = try makeTable()
        let before = connection.roundTrips
        let seen = try connection.transaction(.readCommitted) { () -> Int? in
            connection.runLater("INSERT INTO t VALUES ($1, $2)", [.integer(1), .text("a")])
            connection.runLater("UPDATE t SET note = $1 WHERE n = $2", [.text("b"), .integer(1)])
            return try connection.scalar("SELECT count(*) FROM t WHERE note = $1", [.text("b")], as: Int.self)
        }
        #expect(seen == 1)
        // BEGIN, the two queued, the prepares and the query; then COMMIT on its own.
        #expect(connection.roundTrips == before + 2)
        #expect(try numbers(connection) == [1])
    }

    @Test func aTransactionThatSentNothingCostsNoRoundTrip() throws {
        let connection = try makeTable()
        let before = connection.roundTrips
        let value = try connection.transaction(.repeatableReadReadOnly) { 42 }
        #expect(value == 42)
        #expect(connection.roundTrips == before)
        #expect(!connection.isInTransaction)
    }

    @Test func aFailingQueuedStatementFailsTheCommitAndNothingIsKept() throws {
        let connection = try makeTable()
        try connection.run("INSERT INTO t VALUES ($1, $2)", [.integer(1), .text("kept")])
        let error = postgresError {
            try connection.transaction(.readCommitted) {
                connection.runLater("INSERT INTO t VALUES ($1, $2)", [.integer(2), .text("new")])
                connection.runLater("INSERT INTO t VALUES ($1, $2)", [.integer(1), .text("duplicate")])
                connection.runLater("INSERT INTO t VALUES ($1, $2)", [.integer(3), .text("after")])
            }
        }
        #expect(error?.kind == .uniqueViolation)
        // The error names the statement that failed, not the whole pipeline.
        #expect(error?.sql == "INSERT INTO t VALUES ($1, $2)")
        #expect(!connection.isInTransaction)
        #expect(connection.queuedStatementCount == 0)
        #expect(try numbers(connection) == [1])
        // The connection works on, and prepared the failed pipeline's statement again if need be.
        try connection.transaction(.readCommitted) {
            connection.runLater("INSERT INTO t VALUES ($1, $2)", [.integer(4), .text("later")])
        }
        #expect(try numbers(connection) == [1, 4])
    }

    @Test func aBodyThatThrowsSendsNothingItQueued() throws {
        let connection = try makeTable()
        let before = connection.roundTrips
        #expect(throws: TestFailure(reason: "changed my mind")) {
            try connection.transaction(.readCommitted) {
                connection.runLater("INSERT INTO t VALUES ($1, $2)", [.integer(1), .text("never")])
                throw TestFailure(reason: "changed my mind")
            }
        }
        #expect(connection.roundTrips == before)
        #expect(connection.queuedStatementCount == 0)
        #expect(!connection.isInTransaction)
        #expect(try numbers(connection).isEmpty)
    }

    @Test func aRolledBackSavepointDropsWhatItsBodyQueued() throws {
        let connection = try makeTable()
        try connection.transaction(.readCommitted) {
            connection.runLater("INSERT INTO t VALUES ($1, $2)", [.integer(1), .text("outer")])
            #expect(throws: TestFailure(reason: "inner")) {
                try connection.transaction(.readCommitted) {
                    connection.runLater("INSERT INTO t VALUES ($1, $2)", [.integer(2), .text("inner")])
                    throw TestFailure(reason: "inner")
                }
            }
            connection.runLater("INSERT INTO t VALUES ($1, $2)", [.integer(3), .text("outer")])
        }
        #expect(try numbers(connection) == [1, 3])
    }

    @Test func aSavepointWhoseBodySentAStatementIsRolledBackAlone() throws {
        let connection = try makeTable()
        try connection.transaction(.readCommitted) {
            try connection.run("INSERT INTO t VALUES ($1, $2)", [.integer(1), .text("outer")])
            #expect(throws: TestFailure(reason: "inner")) {
                try connection.transaction(.readCommitted) {
                    try connection.run("INSERT INTO t VALUES ($1, $2)", [.integer(2), .text("sent")])
                    connection.runLater("INSERT INTO t VALUES ($1, $2)", [.integer(3), .text("queued")])
                    throw TestFailure(reason: "inner")
                }
            }
            #expect(connection.queuedStatementCount == 0)
            try connection.run("INSERT INTO t VALUES ($1, $2)", [.integer(4), .text("outer")])
        }
        #expect(try numbers(connection) == [1, 4])
    }

    @Test func aSavepointWhoseFirstStatementIsRefusedBeforeSendingLeavesTheTransactionWhole() throws {
        let connection = try makeTable()
        try connection.transaction(.readCommitted) {
            connection.runLater("INSERT INTO t VALUES ($1, $2)", [.integer(1), .text("before")])
            // The stop check refuses the statement before anything is sent: the SAVEPOINT (queued
            // behind the BEGIN and the insert) never reaches the server, and nothing queued is lost.
            let refused = postgresError {
                try connection.stopping(when: { true }) {
                    try connection.transaction(.readCommitted) { try connection.run("SELECT 1") }
                }
            }
            #expect(refused?.sqlState == "57014")
            #expect(connection.queuedStatementCount == 2)
            try connection.run("INSERT INTO t VALUES ($1, $2)", [.integer(2), .text("after")])
        }
        #expect(try numbers(connection) == [1, 2])
    }

    @Test func aStatementThatWentStaleInAPipelineIsPreparedAnewNextTime() throws {
        let connection = try makeTable()
        try connection.run("INSERT INTO t VALUES ($1, $2)", [.integer(1), .text("a")])
        _ = try connection.query("SELECT * FROM t") { _ in 0 }
        // Its result type changes behind the prepared statement's back.
        try connection.execute("ALTER TABLE t ADD COLUMN extra bigint")
        let stale = postgresError {
            try connection.transaction(.readCommitted) { _ = try connection.query("SELECT * FROM t") { _ in 0 } }
        }
        #expect(stale?.sqlState == "0A000")
        let columns = try connection.transaction(.readCommitted) {
            try connection.query("SELECT * FROM t") { row in row.columnCount }
        }
        #expect(columns == [3])
    }

    @Test func outsideATransactionTheQueueAndItsSenderCommitTogether() throws {
        let connection = try makeTable()
        connection.runLater("INSERT INTO t VALUES ($1, $2)", [.integer(1), .text("a")])
        // The sender fails: the queued insert, in the same implicit transaction, is undone too.
        let error = postgresError { try connection.run("INSERT INTO t VALUES ($1, $2)", [.integer(1), .text("b")]) }
        #expect(error?.kind == .uniqueViolation)
        #expect(try numbers(connection).isEmpty)
        connection.runLater("INSERT INTO t VALUES ($1, $2)", [.integer(2), .text("a")])
        try connection.run("INSERT INTO t VALUES ($1, $2)", [.integer(3), .text("b")])
        #expect(try numbers(connection) == [2, 3])
    }

    @Test func streamingRowsSendsTheQueueFirst() throws {
        let connection = try makeTable()
        try connection.transaction(.readCommitted) {
            connection.runLater("INSERT INTO t VALUES ($1, $2)", [.integer(7), .text("streamed")])
            var rows: [Int64] = []
            try connection.forEachRow("SELECT n FROM t") { rows.append(try $0.get(0, as: Int64.self)) }
            #expect(rows == [7])
        }
    }

    @Test func aPooledConnectionGoesBackWithNothingQueued() throws {
        let url = try PostgresServer.shared().makeDatabase()
        let pool = PostgresPool(.init(url: url, size: 1))
        try pool.withConnection { try $0.execute("CREATE TABLE t (n bigint PRIMARY KEY, note text)") }
        try pool.withConnection { $0.runLater("INSERT INTO t VALUES ($1, $2)", [.integer(1), .text("left behind")]) }
        try pool.withConnection { connection throws in
            #expect(connection.queuedStatementCount == 0)
            #expect(try numbers(connection).isEmpty)
        }
    }
}
