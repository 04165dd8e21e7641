import CSQLite

extension Connection {
    /// Prepares a new, uncached statement owned by the caller.
    public func prepare(_ sql: String) throws -> Statement {
        let statement = try Statement(db: handle, sql: sql, persistent: false)
        preparedStatementCount += 1
        return statement
    }

    /// Runs one statement to completion (rows, if any, are discarded).
    public func run(_ sql: String, _ bindings: [SQLiteValue] = []) throws {
        try withStatement(sql, bindings) { statement in
            while try statement.step() {}
        }
    }

    /// Calls `body` for each result row, streaming (no array is built).
    /// The ``Row`` is only valid inside `body`.
    public func forEachRow(_ sql: String, _ bindings: [SQLiteValue] = [], _ body: (Row) throws -> Void) throws {
        try withStatement(sql, bindings) { statement in
            let row = statement.row
            while try statement.step() {
                try body(row)
            }
        }
    }

    /// A cursor over the result rows of `sql`, read one at a time with ``RowCursor/next()``.
    /// The caller stops whenever it has seen enough (remaining rows are never computed); the
    /// statement goes back to the cache when the cursor is dropped.
    ///
    /// ```swift
    /// var rows = try db.cursor("SELECT ord, size FROM buckets ORDER BY ord")
    /// while let row = try rows.next() {
    ///     if try row.int(1) > 100 { break }
    /// }
    /// ```
    public func cursor(_ sql: String, _ bindings: [SQLiteValue] = []) throws -> RowCursor {
        RowCursor(connection: self, statement: try checkOut(sql, bindings))
    }

    /// Maps every result row through `transform` and returns the results.
    public func query<T>(_ sql: String, _ bindings: [SQLiteValue] = [], _ transform: (Row) throws -> T) throws -> [T] {
        var results: [T] = []
        try forEachRow(sql, bindings) { row in
            results.append(try transform(row))
        }
        return results
    }

    /// Maps the first result row through `transform`; `nil` when there is no row.
    /// Remaining rows are not computed.
    public func firstRow<T>(_ sql: String, _ bindings: [SQLiteValue] = [], _ transform: (Row) throws -> T) throws -> T? {
        try withStatement(sql, bindings) { statement in
            guard try statement.step() else { return nil }
            return try transform(statement.row)
        }
    }

    /// The first column of the first row decoded as `T`, or `nil` when there is no row.
    /// (For a nullable column ask for an optional `T`.)
    public func scalar<T: SQLiteColumnDecodable>(
        _ sql: String, _ bindings: [SQLiteValue] = [], as type: T.Type = T.self
    ) throws -> T? {
        try firstRow(sql, bindings) { row in try row.get(0, as: T.self) }
    }

    // MARK: - Statement cache

    /// Takes the cached statement for `sql` (preparing and caching it on a miss), binds
    /// `bindings`, runs `body`, then resets the statement and clears its bindings.
    ///
    /// - A statement that fails with a `SQLiteError` is evicted from the cache.
    /// - If the cached statement is already being stepped (re-entrant use of the same SQL
    ///   from inside a row callback), a fresh uncached statement is used instead.
    /// - Schema-changing statements (CREATE/DROP/ALTER) are never cached and clear the cache.
    func withStatement<T>(_ sql: String, _ bindings: [SQLiteValue], _ body: (Statement) throws -> T) throws -> T {
        let statement = try checkOut(sql, bindings)
        defer { checkIn(statement) }
        do {
            return try body(statement)
        } catch let error as SQLiteError {
            cache.evict(statement)
            throw error
        }
    }

    /// The cached statement for `sql` (prepared and cached on a miss; a fresh uncached one
    /// when the cached one is being stepped or `sql` changes the schema), marked in use and
    /// bound to `bindings`. Every checked-out statement goes back through ``checkIn(_:)``.
    func checkOut(_ sql: String, _ bindings: [SQLiteValue]) throws -> Statement {
        let changesSchema = Connection.isSchemaChange(sql)
        let statement: Statement
        if !changesSchema, let cached = cache[sql], !cached.isInUse {
            statement = cached
        } else {
            let cacheable = !changesSchema && cache[sql] == nil
            statement = try Statement(db: handle, sql: sql, persistent: cacheable)
            statement.clearsCacheWhenDone = changesSchema
            preparedStatementCount += 1
            if cacheable {
                cache.insert(statement)
            }
        }
        statement.isInUse = true
        do {
            try statement.bind(bindings)
        } catch let error as SQLiteError {
            checkIn(statement)
            cache.evict(statement)
            throw error
        }
        return statement
    }

    /// Resets a checked-out statement and clears its bindings; a schema change clears the cache.
    func checkIn(_ statement: Statement) {
        statement.resetAndClearBindings()
        statement.isInUse = false
        if statement.clearsCacheWhenDone {
            cache.removeAll()
        }
    }

    /// True when the first keyword of `sql` is CREATE, DROP or ALTER (no allocation).
    static func isSchemaChange(_ sql: String) -> Bool {
        var packed: UInt64 = 0
        var letters = 0
        for byte in sql.utf8 {
            let upper = (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) ? byte - 32 : byte
            if upper >= UInt8(ascii: "A") && upper <= UInt8(ascii: "Z") {
                letters += 1
                if letters > 6 { return false }
                packed = packed << 8 | UInt64(upper)
            } else if letters == 0 && (byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D) {
                continue
            } else {
                break
            }
        }
        return packed == schemaKeywords.create || packed == schemaKeywords.drop || packed == schemaKeywords.alter
    }
}

private let schemaKeywords = (
    create: packKeyword("CREATE"),
    drop: packKeyword("DROP"),
    alter: packKeyword("ALTER")
)

private func packKeyword(_ keyword: String) -> UInt64 {
    keyword.utf8.reduce(0) { $0 << 8 | UInt64($1) }
}
