import CPostgres

/// A prepared statement's identity on one connection: its text and its parameter types.
struct StatementKey: Hashable {
    let sql: String
    let types: [Oid]
}

extension PostgresConnection {
    /// Runs one statement to completion and returns the number of rows it affected (rows, if
    /// any, are discarded).
    @discardableResult
    public func run(_ sql: String, _ params: [PostgresValue] = []) throws -> Int {
        try executePrepared(sql, params).affectedRows
    }

    /// Maps every result row through `transform` and returns the results.
    public func query<T>(_ sql: String, _ params: [PostgresValue] = [], _ transform: (PostgresRow) throws -> T) throws -> [T] {
        let result = try executePrepared(sql, params)
        var rows: [T] = []
        rows.reserveCapacity(result.rowCount)
        for index in 0..<result.rowCount {
            rows.append(try transform(PostgresRow(result: result, index: index, sql: sql)))
        }
        return rows
    }

    /// Maps the first result row through `transform`; `nil` when there is no row. (The server
    /// computes the whole result: say `LIMIT 1` when more rows may match.)
    public func firstRow<T>(_ sql: String, _ params: [PostgresValue] = [], _ transform: (PostgresRow) throws -> T) throws -> T? {
        let result = try executePrepared(sql, params)
        guard result.rowCount > 0 else { return nil }
        return try transform(PostgresRow(result: result, index: 0, sql: sql))
    }

    /// The first column of the first row decoded as `T`, or `nil` when there is no row.
    /// (For a nullable column ask for an optional `T`.)
    public func scalar<T: PostgresDecodable>(_ sql: String, _ params: [PostgresValue] = [], as type: T.Type = T.self) throws -> T? {
        try firstRow(sql, params) { row in try row.get(0, as: T.self) }
    }

    /// Calls `body` for each result row as it arrives from the server (libpq's single-row
    /// mode): the result is never held whole, so any number of rows takes constant memory.
    ///
    /// The ``PostgresRow`` is only valid inside `body`, and `body` must not run statements on
    /// this connection (they throw). When `body` throws, the remaining rows are read and
    /// dropped, then its error is rethrown.
    public func forEachRow(_ sql: String, _ params: [PostgresValue] = [], _ body: (PostgresRow) throws -> Void) throws {
        try requireIdle(sql)
        // Rows stream one at a time, outside a pipeline: what was queued goes first, on its own.
        try sendQueued(then: nil)
        try refuseIfStopped(sql)
        let parameters = PostgresParameters(params)
        let name = try preparedStatement(StatementKey(sql: sql, types: parameters.types))
        try dispatch(sql) {
            let sent = parameters.withCArrays { values, lengths, formats in
                PQsendQueryPrepared(handle, name, parameters.count, values, lengths, formats, 0)
            }
            // Right after the send, as libpq asks. Can only fail when called at the wrong
            // moment, which this rules out (and the loop below reads a whole result as well).
            if sent == 1 { _ = PQsetSingleRowMode(handle) }
            return sent
        }
        isStreaming = true
        defer { isStreaming = false }
        var failure: (any Error)?
        // The response deadline restarts with each row: a long result is fine, a silent server is not.
        while let result = try nextResult(sql, deadline: responseDeadline()) {
            // Rows that keep coming never leave the wait in `nextResult` idle: ask here too.
            if stop != nil { cancelIfStopped() }
            guard failure == nil else {
                if PQstatus(handle) == CONNECTION_BAD { break }
                continue  // drain what is left
            }
            switch result.status {
            case PGRES_SINGLE_TUPLE, PGRES_TUPLES_OK:
                // Single rows, then an empty TUPLES_OK that ends the result (had single-row
                // mode been refused, one TUPLES_OK holding every row).
                do {
                    for index in 0..<result.rowCount {
                        try body(PostgresRow(result: result, index: index, sql: sql))
                    }
                } catch {
                    failure = error
                }
            case PGRES_COMMAND_OK:
                break
            default:
                failure = PostgresError(result: result.handle, connection: handle, sql: sql)
            }
            if PQstatus(handle) == CONNECTION_BAD { break }
        }
        if let failure { throw failure }
    }

    // MARK: - Prepared statements

    /// Prepares `sql` (once per connection and parameter types) and executes it with
    /// `params`, returning the whole result.
    func executePrepared(_ sql: String, _ params: [PostgresValue]) throws -> PostgresResult {
        try requireIdle(sql)
        let parameters = PostgresParameters(params)
        let key = StatementKey(sql: sql, types: parameters.types)
        if !queued.isEmpty {
            // Sent with what was queued, in one round trip (no retry of a stale statement: the
            // pipeline's earlier statements ran, or failed, already).
            guard let result = try sendQueued(then: .prepared(key, parameters)) else {
                throw PostgresError(kind: .other, message: "the server sent no result", sql: sql)
            }
            return result
        }
        do {
            return try executePrepared(key, parameters)
        } catch let error as PostgresError where isStaleStatement(error) {
            // Dropped behind our back (DISCARD ALL) or its result type changed (ALTER TABLE):
            // prepare it again, unless a transaction is now aborted anyway.
            statements[key] = nil
            guard !isInTransaction else { throw error }
            return try executePrepared(key, parameters)
        }
    }

    private func executePrepared(_ key: StatementKey, _ parameters: PostgresParameters) throws -> PostgresResult {
        let name = try preparedStatement(key)
        let result = try exchangeOne(key.sql) {
            parameters.withCArrays { values, lengths, formats in
                PQsendQueryPrepared(handle, name, parameters.count, values, lengths, formats, 0)
            }
        }
        try result.check([PGRES_COMMAND_OK, PGRES_TUPLES_OK], connection: handle, sql: key.sql)
        return result
    }

    /// The name of the prepared statement for `key`, preparing it on a miss.
    func preparedStatement(_ key: StatementKey) throws -> String {
        if let name = statements[key] { return name }
        if statements.count >= Self.statementCacheCapacity && !isInTransaction {
            try deallocateAllStatements()
        }
        let name = "bl_\(nextStatementName())"
        let result = try exchangeOne(key.sql) { PQsendPrepare(handle, name, key.sql, Int32(key.types.count), key.types) }
        try result.check([PGRES_COMMAND_OK], connection: handle, sql: key.sql)
        statements[key] = name
        preparedStatementCount += 1
        return name
    }

    private func deallocateAllStatements() throws {
        try exchangeOne("DEALLOCATE ALL") { PQsendQuery(handle, "DEALLOCATE ALL") }.check([PGRES_COMMAND_OK], connection: handle, sql: "DEALLOCATE ALL")
        statements.removeAll()
    }

    /// A prepared statement that no longer exists (26000) or whose cached plan changed its
    /// result type (0A000).
    func isStaleStatement(_ error: PostgresError) -> Bool {
        error.sqlState == "26000" || (error.sqlState == "0A000" && error.message.contains("cached plan"))
    }
}
