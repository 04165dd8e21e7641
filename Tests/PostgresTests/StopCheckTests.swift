import Essentials
import HTTPTestSupport
import Postgres
import TestThreads
import Testing

/// `PostgresConnection.stopping(when:)`: a statement running when the check says stop is
/// cancelled on the server (`PQcancel`), a statement not yet sent is not sent, and the
/// connection serves on afterwards; and `transaction(_:statementTimeout:)` limits its statements.
@Suite(.ownThreads, .timeLimit(.minutes(1))) struct StopCheckTests {
    @Test func aRunningStatementIsCancelledWhenTheCheckSaysStop() throws {
        let connection = try makeConnection()
        let looks = Looks()
        // Says stop from its second look on: the statement is running by then (a sleep of a
        // minute, which only the cancel ends before the suite's time limit).
        let error = postgresError {
            try connection.stopping(when: looks.fromTheSecondOn) {
                try connection.execute("SELECT pg_sleep(60)")
            }
        }
        #expect(error?.kind == .timeout && error?.sqlState == "57014", "\(String(describing: error))")
        #expect(looks.count >= 2)
        #expect(!connection.isBroken)
        #expect(try connection.scalar("SELECT 1", as: Int.self) == 1, "the check is gone and the connection serves on")
    }

    /// A cancel request that did not end the statement (it reached the backend before the
    /// statement started, or the server did not take it) is sent again while the statement runs:
    /// here the statement swallows the first cancel itself and sleeps on.
    @Test func aCancelThatDidNotEndTheStatementIsSentAgain() throws {
        let connection = try makeConnection()
        let looks = Looks()
        let error = postgresError {
            try connection.stopping(when: looks.fromTheSecondOn) {
                try connection.execute("""
                    DO $$ BEGIN
                        BEGIN PERFORM pg_sleep(60); EXCEPTION WHEN query_canceled THEN NULL; END;
                        PERFORM pg_sleep(60);
                    END $$
                    """)
            }
        }
        #expect(error?.kind == .timeout && error?.sqlState == "57014", "\(String(describing: error))")
        #expect(!connection.isBroken)
        #expect(try connection.scalar("SELECT 1", as: Int.self) == 1)
    }

    @Test func nothingIsSentOnceTheCheckSaysStop() throws {
        let connection = try makeConnection()
        try connection.execute("CREATE TABLE t (n bigint)")
        let error = postgresError {
            try connection.stopping(when: { true }) { try connection.run("INSERT INTO t VALUES (1)") }
        }
        #expect(error?.kind == .timeout)
        #expect(try connection.scalar("SELECT count(*) FROM t", as: Int.self) == 0)
    }

    @Test func aTransactionsStatementTimeoutEndsALongStatement() throws {
        let connection = try makeConnection()
        let error = postgresError {
            try connection.transaction(.repeatableReadReadOnly, statementTimeout: .milliseconds(50)) {
                try connection.execute("SELECT pg_sleep(60)")
            }
        }
        #expect(error?.kind == .timeout && error?.sqlState == "57014", "\(String(describing: error))")
        #expect(!connection.isInTransaction)
        // SET LOCAL: the session's own timeout is back after the transaction.
        #expect(try connection.scalar("SHOW statement_timeout", as: String.self) != "50ms")
    }
}

/// A stop check that counts its looks and says stop from the second on: the first comes before
/// the statement is sent (a check that says stop at once sends nothing).
private final class Looks {
    private(set) var count = 0

    func fromTheSecondOn() -> Bool {
        count += 1
        return count >= 2
    }
}
