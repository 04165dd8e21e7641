import CPostgres

/// A statement ``PostgresConnection/runLater(_:_:)`` queued: a prepared one with its parameters,
/// or a plain command without any (`BEGIN`, `COMMIT`, `SET LOCAL …`).
enum QueuedStatement {
    case prepared(StatementKey, PostgresParameters)
    case plain(String)

    var sql: String {
        switch self {
        case let .prepared(key, _): key.sql
        case let .plain(sql): sql
        }
    }
}

/// Statements whose answers nobody waits for go to the server with the next one that needs its
/// answer, in one round trip (libpq's pipeline mode): a write transaction's `BEGIN`, the rows it
/// only writes, and its `COMMIT` cost one exchange instead of one each.
extension PostgresConnection {
    /// Queues `sql` to run before the next statement sent on this connection (in the order
    /// queued), in the same round trip; nothing is sent now. For statements whose rows and
    /// changed-row count the caller does not need: their error, if any, is thrown by the
    /// statement that sends them (a `COMMIT` included), and the statements after the failed one
    /// do not run. Outside a transaction, the queued statements and the one that sends them run
    /// in one implicit transaction.
    public func runLater(_ sql: String, _ params: [PostgresValue] = []) {
        let parameters = PostgresParameters(params)
        queued.append(.prepared(StatementKey(sql: sql, types: parameters.types), parameters))
    }

    /// Statements queued by ``runLater(_:_:)`` and not sent yet.
    public var queuedStatementCount: Int { queued.count }

    /// Forgets the queued statements (a transaction that is being rolled back, or a connection
    /// going back to its pool): they are never sent.
    public func discardQueued() {
        queued.removeAll()
        pendingBegin = nil
    }

    /// Sends the queued statements, then `last` when given, in one pipeline (one round trip),
    /// and returns `last`'s result. Throws the first failed statement's error (the others after
    /// it did not run); the queue is empty afterwards either way.
    @discardableResult
    func sendQueued(then last: QueuedStatement?) throws -> PostgresResult? {
        let batch = queued + (last.map { [$0] } ?? [])
        discardQueued()
        guard !batch.isEmpty else { return nil }
        let label = batch.map(\.sql).joined(separator: "; ")
        try requireIdle(label)
        try refuseIfStopped(label)
        guard PQenterPipelineMode(handle) == 1 else { throw PostgresError(connection: handle, sql: label) }
        // Statement names prepared in this pipeline: cached only if the pipeline succeeded.
        var preparing: [(StatementKey, String)] = []
        var commands = 0
        try dispatch(label) {
            for statement in batch {
                switch statement {
                case let .prepared(key, parameters):
                    var name = statements[key]
                    if name == nil, let earlier = preparing.first(where: { $0.0 == key }) { name = earlier.1 }
                    if name == nil {
                        let made = "bl_\(nextStatementName())"
                        guard PQsendPrepare(handle, made, key.sql, Int32(key.types.count), key.types) == 1 else { return 0 }
                        preparing.append((key, made))
                        commands += 1
                        name = made
                    }
                    let sent = parameters.withCArrays { values, lengths, formats in
                        PQsendQueryPrepared(handle, name, parameters.count, values, lengths, formats, 0)
                    }
                    guard sent == 1 else { return 0 }
                case let .plain(sql):
                    guard PQsendQueryParams(handle, sql, 0, nil, nil, nil, nil, 0) == 1 else { return 0 }
                }
                commands += 1
            }
            return PQpipelineSync(handle)
        }
        // Every command's results end with a NULL; the pipeline's with its sync result.
        var failure: (any Error)?
        var lastResult: PostgresResult?
        var command = 0
        while true {
            guard let result = try nextResult(label, deadline: responseDeadline()) else {
                if isBroken { throw failure ?? PostgresError(connection: handle, sql: label) }
                command += 1
                continue
            }
            let status = result.status
            if status == PGRES_PIPELINE_SYNC { break }
            if failure == nil, status != PGRES_PIPELINE_ABORTED {
                let sql = command < commands ? statementSQL(at: command, in: batch, preparing: preparing) : label
                do {
                    try result.check([PGRES_COMMAND_OK, PGRES_TUPLES_OK], connection: handle, sql: sql)
                } catch {
                    failure = error
                }
            }
            lastResult = result
        }
        guard PQexitPipelineMode(handle) == 1 else { throw failure ?? PostgresError(connection: handle, sql: label) }
        if let failure { throw failure }
        for (key, name) in preparing {
            statements[key] = name
            preparedStatementCount += 1
        }
        return last == nil ? nil : lastResult
    }

    /// The SQL of the `index`-th command sent (a prepare counts as one, before its statement),
    /// for an error's message.
    private func statementSQL(at index: Int, in statements: [QueuedStatement], preparing: [(StatementKey, String)]) -> String {
        var remaining = index
        var prepared: Set<String> = []
        for statement in statements {
            if case let .prepared(key, _) = statement, let name = preparing.first(where: { $0.0 == key })?.1,
               !prepared.contains(name)
            {
                prepared.insert(name)
                if remaining == 0 { return key.sql }
                remaining -= 1
            }
            if remaining == 0 { return statement.sql }
            remaining -= 1
        }
        return statements.last?.sql ?? ""
    }
}
