import Essentials
import HTTPTestSupport
import Postgres
import TestThreads
import Testing

@Suite(.ownThreads) struct ErrorTests {
    @Test func aSyntaxErrorCarriesItsSQLStateAndText() throws {
        let connection = try makeConnection()
        let error = postgresError { try connection.run("SELEC 1") }
        #expect(error?.kind == .other)
        #expect(error?.sqlState == "42601")
        #expect(error?.sql == "SELEC 1")
        #expect(error?.isUnavailable == false)
        #expect(error?.description.contains("syntax error") == true)
        // The connection is still usable.
        #expect(try connection.scalar("SELECT 1", as: Int.self) == 1)
        #expect(!connection.isBroken)
    }

    @Test func aUniqueViolationNamesItsConstraint() throws {
        let connection = try makeConnection()
        try connection.execute("CREATE TABLE t (id bigint CONSTRAINT t_pkey PRIMARY KEY, name text CONSTRAINT t_name_key UNIQUE)")
        try connection.run("INSERT INTO t VALUES ($1, $2)", [.integer(1), .text("a")])
        let byKey = postgresError { try connection.run("INSERT INTO t VALUES ($1, $2)", [.integer(1), .text("b")]) }
        #expect(byKey?.kind == .uniqueViolation)
        #expect(byKey?.sqlState == "23505")
        #expect(byKey?.constraint == "t_pkey")
        let byName = postgresError { try connection.run("INSERT INTO t VALUES ($1, $2)", [.integer(2), .text("a")]) }
        #expect(byName?.kind == .uniqueViolation)
        #expect(byName?.constraint == "t_name_key")
        // Values never appear in the error's text (the server's DETAIL is not kept).
        #expect(byName?.description.contains("(a)") == false)
    }

    @Test func otherConstraintsAreOther() throws {
        let connection = try makeConnection()
        try connection.execute("CREATE TABLE t (n bigint NOT NULL CONSTRAINT positive CHECK (n > 0))")
        let check = postgresError { try connection.run("INSERT INTO t VALUES ($1)", [.integer(-1)]) }
        #expect(check?.kind == .other)
        #expect(check?.sqlState == "23514")
        #expect(check?.constraint == "positive")
        #expect(postgresError { try connection.run("INSERT INTO t VALUES ($1)", [.null]) }?.sqlState == "23502")
    }

    @Test func sqlStatesMapToKinds() {
        #expect(PostgresError.kind(forSQLState: "40001") == .serialization)
        #expect(PostgresError.kind(forSQLState: "40P01") == .deadlock)
        #expect(PostgresError.kind(forSQLState: "57014") == .timeout)
        #expect(PostgresError.kind(forSQLState: "55P03") == .timeout)
        for state in ["08000", "08006", "08001", "57P01", "57P02", "57P03", "53300"] {
            #expect(PostgresError.kind(forSQLState: state) == .connection)
            #expect(PostgresError(sqlState: state, message: "").isUnavailable)
        }
        #expect(PostgresError(kind: .poolExhausted, message: "").isUnavailable)
        // A busy server (statement or lock timeout) and a transaction aborted because of
        // concurrent ones: the same request may succeed in a moment (503, not 500).
        for state in ["57014", "55P03", "40P01", "40001"] {
            #expect(PostgresError(sqlState: state, message: "").isUnavailable, "\(state)")
        }
        // Class 22 (data exception): the input's fault, a client error.
        for state in ["22012", "22021", "22003", "22P02"] {
            #expect(PostgresError.kind(forSQLState: state) == .invalidData)
            #expect(!PostgresError(sqlState: state, message: "").isUnavailable)
        }
        #expect(!PostgresError(sqlState: "42601", message: "").isUnavailable)
        #expect(!PostgresError(sqlState: "23505", message: "").isUnavailable)
        let unavailable: any UnavailableDependency = PostgresError(kind: .connection, message: "gone")
        #expect(unavailable.retryAfterSeconds > 0)
    }

    @Test func textWithANulCharacterIsInvalidData() throws {
        let connection = try makeConnection()
        let error = postgresError { try connection.scalar("SELECT $1", [.text("a\u{0}b")], as: String.self) }
        #expect(error?.kind == .invalidData, "\(String(describing: error))")
        #expect(error?.sqlState == "22021")
        #expect(error?.isUnavailable == false)
        #expect(try connection.scalar("SELECT 1", as: Int.self) == 1)
    }

    @Test func noServerIsAConnectionError() throws {
        // A port nothing listens on (taken, then released).
        let server = try PostgresServer()
        let url = server.url()
        try server.stop()
        let error = postgresError { _ = try PostgresConnection(url: url, connectTimeout: .seconds(5)) }
        #expect(error?.kind == .connection)
        #expect(error?.isUnavailable == true)
    }

    @Test func aStatementTimeoutIsATimeout() throws {
        let connection = try makeConnection()
        try connection.setStatementTimeout(.milliseconds(50))
        let error = postgresError { try connection.run("SELECT pg_sleep(30)") }
        #expect(error?.kind == .timeout)
        #expect(error?.sqlState == "57014")
        #expect(error?.isUnavailable == true)
        try connection.setStatementTimeout(nil)
        #expect(try connection.scalar("SHOW statement_timeout", as: String.self) == "0")
    }

    @Test func aTerminatedSessionBreaksTheConnection() throws {
        let connection = try makeConnection()
        let killer = try PostgresConnection(url: try PostgresServer.shared().url())
        #expect(try killer.scalar("SELECT pg_terminate_backend($1::integer, 10000)", [.integer(Int64(connection.backendPID))], as: Bool.self) == true)
        let error = postgresError { try connection.run("SELECT 1") }
        #expect(error?.kind == .connection)
        #expect(connection.isBroken)
        // Further use fails the same way, at once.
        #expect(postgresError { try connection.run("SELECT 1") }?.kind == .connection)
    }
}

@Suite(.ownThreads) struct ConnectionSettingsTests {
    @Test func theURLsOwnParametersWinOverTheDefaults() throws {
        let url = try PostgresServer.shared().makeDatabase()
        let plain = try PostgresConnection(url: url)
        #expect(try plain.scalar("SHOW application_name", as: String.self) == "bluelibrary")
        let named = try PostgresConnection(url: url + "?application_name=other")
        #expect(try named.scalar("SHOW application_name", as: String.self) == "other")
        #expect(try named.scalar("SHOW client_encoding", as: String.self) == "UTF8")
        // The client encoding is ours, whatever the URL says.
        let latin = try PostgresConnection(url: url + "?client_encoding=LATIN1")
        #expect(try latin.scalar("SHOW client_encoding", as: String.self) == "UTF8")
    }
}
