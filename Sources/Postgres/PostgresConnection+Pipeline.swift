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
    /// do not run. Outside a transaction, the queued statements and the statement that sends them
    /// run in one implicit transaction (`forEachRow` and a script of several statements send the
    /// queue on its own first).
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
        queueGeneration += 1
    }

    /// Sends the queued statements, then `last` when given, in one pipeline (one round trip),
    /// and returns `last`'s result. Throws the first failed statement's error (the statements
    /// after it did not run); the queue is empty afterwards either way, except when nothing was
    /// sent (a connection streaming rows, a stop check that says stop). A connection that fails
    /// midway (a send refused, the server not answering, a result out of order) is abandoned:
    /// it is broken from then on, so a transaction on it cannot go on without what it lost.
    @discardableResult
    func sendQueued(then last: QueuedStatement?) throws -> PostgresResult? {
        // Every statement passes here (forEachRow, execute): nothing to do is the common case.
        guard !queued.isEmpty || last != nil else { return nil }
        let batch = queued + (last.map { [$0] } ?? [])
        let label = batch.map(\.sql).joined(separator: "; ")
        try requireIdle(label)
        try refuseIfStopped(label)
        discardQueued()
        do {
            return try runPipeline(batch, label: label, returnsLast: last != nil)
        } catch let error as PipelineFailure {
            throw error.underlying
        } catch {
            // Not the failure of a statement: the connection is in an unknown state.
            if !isBroken { _ = abandon(sql: label) }
            throw error
        }
    }

    /// A statement of the pipeline failed; the pipeline itself ended cleanly.
    private struct PipelineFailure: Error {
        let underlying: any Error
    }

    /// One command of a pipeline, as sent: a prepare (with the name it makes) or an execution.
    private enum Command {
        case prepare(StatementKey, name: String)
        case execute(QueuedStatement)

        var sql: String {
            switch self {
            case let .prepare(key, _): key.sql
            case let .execute(statement): statement.sql
            }
        }
    }

    private func runPipeline(_ batch: [QueuedStatement], label: String, returnsLast: Bool) throws -> PostgresResult? {
        guard PQenterPipelineMode(handle) == 1 else { throw PostgresError(connection: handle, sql: label) }
        var commands: [Command] = []
        try dispatch(label) {
            for statement in batch {
                switch statement {
                case let .prepared(key, parameters):
                    var name = statements[key]
                    if name == nil, case let .prepare(_, earlier)? = commands.first(where: {
                        if case let .prepare(k, _) = $0 { return k == key } else { return false }
                    }) {
                        name = earlier
                    }
                    if name == nil {
                        let made = "bl_\(nextStatementName())"
                        guard PQsendPrepare(handle, made, key.sql, Int32(key.types.count), key.types) == 1 else { return 0 }
                        commands.append(.prepare(key, name: made))
                        name = made
                    }
                    let sent = parameters.withCArrays { values, lengths, formats in
                        PQsendQueryPrepared(handle, name, parameters.count, values, lengths, formats, 0)
                    }
                    guard sent == 1 else { return 0 }
                case let .plain(sql):
                    guard PQsendQueryParams(handle, sql, 0, nil, nil, nil, nil, 0) == 1 else { return 0 }
                }
                commands.append(.execute(statement))
            }
            return PQpipelineSync(handle)
        }
        // Each command's results end with a NULL; the pipeline's with its sync result.
        var failure: (any Error)?
        var lastResult: PostgresResult?
        var index = 0
        while true {
            guard let result = try nextResult(label, deadline: responseDeadline()) else {
                if isBroken { throw failure ?? PostgresError(connection: handle, sql: label) }
                index += 1
                continue
            }
            let status = result.status
            if status == PGRES_PIPELINE_SYNC { break }
            // Past the last command: the server's own error (a shutdown's FATAL), then the end.
            let command = index < commands.count ? commands[index] : nil
            if failure == nil, status != PGRES_PIPELINE_ABORTED {
                do {
                    try result.check([PGRES_COMMAND_OK, PGRES_TUPLES_OK], connection: handle, sql: command?.sql ?? label)
                    if case let .prepare(key, name)? = command {
                        // Made on the server whatever happens to the rest of the pipeline.
                        statements[key] = name
                        preparedStatementCount += 1
                    }
                } catch let error as PostgresError {
                    failure = error
                    if isStaleStatement(error), case let .execute(.prepared(key, _))? = command {
                        // Dropped behind our back or its result type changed: prepare it anew next time.
                        statements[key] = nil
                    }
                }
            }
            lastResult = result
        }
        guard PQexitPipelineMode(handle) == 1 else { throw PostgresError(connection: handle, sql: label) }
        if let failure { throw PipelineFailure(underlying: failure) }
        return returnsLast ? lastResult : nil
    }
}
