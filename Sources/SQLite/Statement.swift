import CSQLite

/// `SQLITE_TRANSIENT`: tells SQLite to copy bound text/blob bytes before the bind call returns.
/// The C macro is a cast of -1 to a function pointer, which Swift cannot import.
let sqliteTransient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

/// A prepared statement. Owns its `sqlite3_stmt*` and finalizes it in `deinit`.
///
/// Not thread-safe: use it only from the thread that owns its ``Connection``.
/// Most code should use the ``Connection`` helpers (`run`, `forEachRow`, `scalar`, ...),
/// which take statements from the connection's cache.
public final class Statement {
    let handle: OpaquePointer
    /// The connection's handle, for error messages. The connection is closed with
    /// `sqlite3_close_v2`, so this pointer stays valid until every statement is finalized.
    let db: OpaquePointer
    /// The SQL text this statement was prepared from.
    public let sql: String
    /// Set while a connection helper is stepping this statement, so that a re-entrant use of
    /// the same SQL gets a fresh statement instead of resetting this one.
    var isInUse = false
    /// Set on a statement that changes the schema: the connection clears its statement cache
    /// when the statement is checked in (such statements are never cached themselves).
    var clearsCacheWhenDone = false

    init(db: OpaquePointer, sql: String, persistent: Bool) throws {
        self.db = db
        self.sql = sql
        let flags: UInt32 = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        var statement: OpaquePointer?
        var hasTrailingStatement = false
        let length = sql.utf8.count
        let rc = sql.withCString { cSQL -> Int32 in
            var tail: UnsafePointer<CChar>?
            let rc = sqlite3_prepare_v3(db, cSQL, Int32(length), flags, &statement, &tail)
            guard rc == SQLITE_OK, let tail else { return rc }
            // Only one statement per prepare: anything after it other than whitespace and
            // comments would be silently ignored by SQLite, so reject it.
            let remaining = cSQL + length - tail
            if remaining > 0 {
                var extra: OpaquePointer?
                let extraRC = sqlite3_prepare_v2(db, tail, Int32(remaining), &extra, nil)
                if extra != nil {
                    hasTrailingStatement = true
                    sqlite3_finalize(extra)
                } else if extraRC != SQLITE_OK {
                    hasTrailingStatement = true
                }
            }
            return rc
        }
        guard rc == SQLITE_OK else {
            sqlite3_finalize(statement)
            throw SQLiteError(resultCode: rc, db: db, sql: sql)
        }
        guard let statement else {
            throw SQLiteError(extendedCode: SQLITE_MISUSE, message: "no SQL statement to prepare", sql: sql)
        }
        guard !hasTrailingStatement else {
            sqlite3_finalize(statement)
            throw SQLiteError(
                extendedCode: SQLITE_MISUSE,
                message: "more than one SQL statement; use Connection.execute(_:) for scripts",
                sql: sql
            )
        }
        self.handle = statement
    }

    deinit {
        // Returns the last step's error, already reported by step(); nothing to do with it here.
        sqlite3_finalize(handle)
    }

    public var parameterCount: Int { Int(sqlite3_bind_parameter_count(handle)) }
    public var columnCount: Int { Int(sqlite3_column_count(handle)) }
    /// True if the statement does not write to the database.
    public var isReadOnly: Bool { sqlite3_stmt_readonly(handle) != 0 }

    // MARK: - Binding

    /// Binds all parameters positionally; the count must match the statement's parameters.
    public func bind(_ values: [SQLiteValue]) throws {
        let expected = parameterCount
        guard values.count == expected else {
            throw SQLiteError(
                extendedCode: SQLITE_RANGE,
                message: "statement has \(expected) parameter(s) but \(values.count) value(s) were bound",
                sql: sql
            )
        }
        var index: Int32 = 1
        for value in values {
            try bind(value, at: index)
            index += 1
        }
    }

    /// Binds one parameter (1-based index, as in SQLite).
    public func bind(_ value: SQLiteValue, at index: Int32) throws {
        let rc: Int32
        switch value {
        case .null:
            rc = sqlite3_bind_null(handle, index)
        case .integer(let integer):
            rc = sqlite3_bind_int64(handle, index, integer)
        case .real(let real):
            // SQLite would silently store NaN as NULL.
            guard !real.isNaN else {
                throw SQLiteError(extendedCode: SQLITE_MISMATCH, message: "cannot bind NaN (parameter \(index))", sql: sql)
            }
            rc = sqlite3_bind_double(handle, index, real)
        case .text(var text):
            rc = text.withUTF8 { bytes -> Int32 in
                // A nil pointer would bind NULL, so an empty string binds a static "".
                guard let base = bytes.baseAddress, bytes.count > 0 else {
                    return sqlite3_bind_text(handle, index, "", 0, sqliteTransient)
                }
                return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                    sqlite3_bind_text64(handle, index, $0, UInt64(bytes.count), sqliteTransient, UInt8(SQLITE_UTF8))
                }
            }
        case .blob(let bytes):
            rc = bytes.withUnsafeBytes { buffer -> Int32 in
                // A nil pointer would bind NULL, so an empty blob binds a zero-length zeroblob.
                guard let base = buffer.baseAddress, buffer.count > 0 else {
                    return sqlite3_bind_zeroblob(handle, index, 0)
                }
                return sqlite3_bind_blob64(handle, index, base, UInt64(buffer.count), sqliteTransient)
            }
        }
        guard rc == SQLITE_OK else {
            throw SQLiteError(resultCode: rc, db: db, sql: sql)
        }
    }

    // MARK: - Stepping

    /// Advances to the next row. Returns `true` when a row is available, `false` when done.
    public func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw SQLiteError(resultCode: rc, db: db, sql: sql)
        }
    }

    /// The current row; valid only until the next `step()` / `reset()`.
    public var row: Row { Row(statement: self) }

    /// Resets the statement so it can run again; bindings are kept.
    public func reset() {
        // sqlite3_reset returns the error of the last step, which step() already threw.
        _ = sqlite3_reset(handle)
    }

    /// Resets and releases bound values (so big blobs are not kept alive by the cache).
    public func resetAndClearBindings() {
        _ = sqlite3_reset(handle) // see reset()
        _ = sqlite3_clear_bindings(handle) // always returns SQLITE_OK
    }
}

@available(*, unavailable)
extension Statement: Sendable {}
