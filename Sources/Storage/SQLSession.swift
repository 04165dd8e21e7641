import SQLite

/// A value bound to a statement parameter: SQLite's five storage classes. The PostgreSQL
/// session maps each onto its `PostgresValue` (`.blob` → `bytea`), so the engine binds the same
/// values on both.
typealias SQLValue = SQLiteValue

/// The current row of a statement, as the album engine reads it: valid only inside the
/// callback it is passed to. SQLite's `Row` and the PostgreSQL session's row conform.
protocol SQLRow {
    func isNull(_ column: Int) -> Bool
    func int(_ column: Int) throws -> Int
    func int64(_ column: Int) throws -> Int64
    func double(_ column: Int) throws -> Double
    func string(_ column: Int) throws -> String
    func blob(_ column: Int) throws -> [UInt8]
    func bool(_ column: Int) throws -> Bool
}

extension SQLRow {
    /// `nil` for NULL, else the column as an `Int`.
    func optionalInt(_ column: Int) throws -> Int? { isNull(column) ? nil : try int(column) }
    /// `nil` for NULL, else the column as an `Int64`.
    func optionalInt64(_ column: Int) throws -> Int64? { isNull(column) ? nil : try int64(column) }
    /// `nil` for NULL, else the column as a `String`.
    func optionalString(_ column: Int) throws -> String? { isNull(column) ? nil : try string(column) }
}

/// A type `SQLSession.scalar` can read from the first column of a row.
protocol SQLScalar {
    static func read(from row: some SQLRow, at column: Int) throws -> Self
}

extension Int: SQLScalar {
    static func read(from row: some SQLRow, at column: Int) throws -> Int { try row.int(column) }
}

extension Int64: SQLScalar {
    static func read(from row: some SQLRow, at column: Int) throws -> Int64 { try row.int64(column) }
}

extension Bool: SQLScalar {
    static func read(from row: some SQLRow, at column: Int) throws -> Bool { try row.bool(column) }
}

extension String: SQLScalar {
    static func read(from row: some SQLRow, at column: Int) throws -> String { try row.string(column) }
}

extension Optional: SQLScalar where Wrapped: SQLScalar {
    static func read(from row: some SQLRow, at column: Int) throws -> Wrapped? {
        row.isNull(column) ? nil : try Wrapped.read(from: row, at: column)
    }
}

/// The statements of one transaction, as the album engine (`LibraryTransaction` and its
/// parts) runs them: SQLite's `Connection` conforms directly, PostgreSQL through
/// `PostgresSession`. SQL text uses SQLite's `?N` placeholders; what must differ between the
/// two is in `SQLDialect`. The engine is generic over the session (not existential), so the
/// SQLite path compiles to the direct calls it always made.
///
/// One thread at a time, like the connection under it.
protocol SQLSession: AnyObject {
    associatedtype Row: SQLRow

    /// Which SQL this session speaks.
    var dialect: SQLDialect { get }

    /// Runs one statement to completion (rows, if any, are discarded).
    func run(_ sql: String, _ bindings: [SQLValue]) throws
    /// Runs one statement whose changed-row count and rows nobody needs: at once on SQLite; on
    /// PostgreSQL it goes with the session's next statement (the commit at the latest), in its
    /// round trip, so its error, if any, comes from that statement. In order with every other
    /// statement of the session. Never for a statement whose error the caller handles.
    func runLater(_ sql: String, _ bindings: [SQLValue]) throws
    /// Rows changed by the latest `run`.
    var changes: Int { get }
    /// Calls `body` for each result row (the row is valid only inside `body`).
    func forEachRow(_ sql: String, _ bindings: [SQLValue], _ body: (Row) throws -> Void) throws
    /// Calls `body` for result rows in order until it returns false; rows after that are
    /// never handed out (SQLite never computes them).
    func scan(_ sql: String, _ bindings: [SQLValue], _ body: (Row) throws -> Bool) throws
    /// Maps every result row through `transform`.
    func query<T>(_ sql: String, _ bindings: [SQLValue], _ transform: (Row) throws -> T) throws -> [T]
    /// Maps the first result row through `transform`; `nil` when there is none.
    func firstRow<T>(_ sql: String, _ bindings: [SQLValue], _ transform: (Row) throws -> T) throws -> T?

    /// True when `error`, thrown by this session, is a violated UNIQUE constraint.
    static func isUniqueViolation(_ error: any Error) -> Bool

    /// Inserts an appended album row (`SQL.insertAlbum`'s parameters), at once or queued with
    /// the next ones (see `SQLDialect.queuesAppendedAlbums`); queued rows go before the
    /// session's next statement, and a duplicate id among them fails that statement with
    /// `LibraryError.conflict`.
    func queueAlbumRow(_ bindings: [SQLValue]) throws
}

extension SQLSession {
    /// The first column of the first row as `T` (ask for an optional `T` for a nullable column),
    /// or `nil` when there is no row.
    func value<T: SQLScalar>(_ sql: String, _ bindings: [SQLValue] = [], as type: T.Type = T.self) throws -> T? {
        try firstRow(sql, bindings) { row in try T.read(from: row, at: 0) }
    }
}

// MARK: - SQLite

extension Row: SQLRow {}

extension Connection: SQLSession {
    var dialect: SQLDialect { .sqlite }

    func scan(_ sql: String, _ bindings: [SQLValue], _ body: (Row) throws -> Bool) throws {
        var rows = try cursor(sql, bindings)
        while let row = try rows.next() {
            guard try body(row) else { return }
        }
    }

    static func isUniqueViolation(_ error: any Error) -> Bool {
        (error as? SQLiteError)?.isUniqueViolation ?? false
    }

    /// In-process: nothing to save by waiting.
    func runLater(_ sql: String, _ bindings: [SQLValue]) throws {
        try run(sql, bindings)
    }

    /// SQLite queues nothing (its dialect does not ask to): the row is inserted at once.
    func queueAlbumRow(_ bindings: [SQLValue]) throws {
        try run(SQL.insertAlbum, bindings)
    }
}
