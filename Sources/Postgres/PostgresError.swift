import CPostgres
import Essentials

/// An error reported by PostgreSQL, by libpq, or by this wrapper (a pool with no free
/// connection, a column that does not decode as asked).
///
/// Carries the SQLSTATE when the server sent one, the server's primary message and, for a
/// constraint violation, the constraint's name. Bound parameter values are never recorded, so
/// the error is safe to log.
public struct PostgresError: Error, CustomStringConvertible, Sendable, UnavailableDependency {
    /// What a caller may want to act on; everything else is `.other`.
    public enum Kind: Sendable, Hashable {
        /// The server cannot be reached, closed the connection, or is shutting down (SQLSTATE
        /// class 08, 57P01–57P03, 53300): the same work may succeed on a new connection later.
        case connection
        /// A unique or primary key constraint was violated (23505); see ``constraint``.
        case uniqueViolation
        /// A serializable transaction could not be serialized (40001): retry it.
        case serialization
        /// The transaction was chosen as a deadlock victim (40P01): retry it.
        case deadlock
        /// ``PostgresPool`` had no free connection within its acquire timeout.
        case poolExhausted
        /// The statement ran longer than `statement_timeout` or waited longer than
        /// `lock_timeout` (57014, 55P03).
        case timeout
        /// A value the server refuses as data (SQLSTATE class 22, data exception): text with a
        /// NUL character (22021), a number out of range, an invalid escape in a LIKE pattern…
        /// The caller's input is at fault, not the server: a client error, never a 500.
        case invalidData
        case other
    }

    public var kind: Kind
    /// The five-character SQLSTATE code, when the server (or libpq) reported one.
    public var sqlState: String?
    /// The primary message (without SQLSTATE or position details).
    public var message: String
    /// The violated constraint's name (`PG_DIAG_CONSTRAINT_NAME`), when there is one.
    public var constraint: String?
    /// The SQL text of the failing statement, as written (never with values in it).
    public var sql: String?

    public init(kind: Kind, sqlState: String? = nil, message: String, constraint: String? = nil, sql: String? = nil) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.constraint = constraint
        self.sql = sql
    }

    /// The error a server-reported SQLSTATE stands for.
    public init(sqlState: String, message: String, constraint: String? = nil, sql: String? = nil) {
        self.init(kind: Self.kind(forSQLState: sqlState), sqlState: sqlState, message: message, constraint: constraint, sql: sql)
    }

    /// The ``Kind`` of a SQLSTATE (<https://www.postgresql.org/docs/15/errcodes-appendix.html>).
    public static func kind(forSQLState state: String) -> Kind {
        switch state {
        case "23505": .uniqueViolation
        case "40001": .serialization
        case "40P01": .deadlock
        case "57014", "55P03": .timeout
        case "57P01", "57P02", "57P03", "53300": .connection
        case _ where state.hasPrefix("08"): .connection
        case _ where state.hasPrefix("22"): .invalidData
        default: .other
        }
    }

    public var description: String {
        var text = "PostgreSQL error"
        if let sqlState { text += " \(sqlState)" }
        text += " (\(kind)): \(message)"
        if let constraint { text += " [constraint: \(constraint)]" }
        if let sql { text += " [SQL: \(sql)]" }
        return text
    }

    // MARK: - UnavailableDependency

    /// True when the same work may well succeed in a moment: a server that cannot be reached,
    /// does not answer or is shutting down, a full pool, a statement or lock timeout (a busy
    /// server), and a deadlock or serialization failure (the store retries those once before
    /// giving up): the server answers 503 with `Retry-After`.
    public var isUnavailable: Bool {
        switch kind {
        case .connection, .poolExhausted, .timeout, .deadlock, .serialization: true
        case .uniqueViolation, .invalidData, .other: false
        }
    }

    public var retryAfterSeconds: Int { kind == .connection ? 2 : 1 }
}

extension PostgresError {
    /// The error carried by a failed result (`PGRES_FATAL_ERROR`), or, when libpq reported the
    /// failure without a SQLSTATE, a `.connection` error if the connection is gone.
    init(result: OpaquePointer, connection: OpaquePointer, sql: String?) {
        let state = Self.field(result, "C")
        let message = Self.field(result, "M")
            ?? trimmedMessage(PQresultErrorMessage(result))
            ?? trimmedMessage(PQerrorMessage(connection))
            ?? "unknown error"
        let constraint = Self.field(result, "n")
        if let state {
            self.init(sqlState: state, message: message, constraint: constraint, sql: sql)
        } else {
            let kind: Kind = PQstatus(connection) == CONNECTION_OK ? .other : .connection
            self.init(kind: kind, message: message, sql: sql)
        }
    }

    /// The error of a failed libpq call that returned no result (out of memory, or the
    /// connection is gone).
    init(connection: OpaquePointer, sql: String?) {
        let message = trimmedMessage(PQerrorMessage(connection)) ?? "unknown libpq error"
        let kind: Kind = PQstatus(connection) == CONNECTION_OK ? .other : .connection
        self.init(kind: kind, message: message, sql: sql)
    }

    /// One field of a result's error (`PG_DIAG_*` codes are single ASCII letters).
    private static func field(_ result: OpaquePointer, _ code: Unicode.Scalar) -> String? {
        guard let value = PQresultErrorField(result, Int32(code.value)) else { return nil }
        return String(cString: value)
    }
}

/// A libpq message without its trailing newline; nil when empty.
func trimmedMessage(_ message: UnsafePointer<CChar>?) -> String? {
    guard let message else { return nil }
    var text = String(cString: message)
    while text.last?.isNewline == true { text.removeLast() }
    return text.isEmpty ? nil : text
}
