extension PostgresConnection {
    /// The isolation (and access) of a transaction ``PostgresConnection/transaction(_:_:)`` opens.
    public enum TransactionMode: Sendable {
        /// Each statement sees what was committed before it started. For writes that lock what
        /// they change first (`SELECT … FOR UPDATE`).
        case readCommitted
        /// One snapshot for the whole transaction, no writes: consistent multi-statement reads.
        case repeatableReadReadOnly
        /// Fails with a `.serialization` error instead of allowing an anomaly: retry it.
        case serializable

        var beginSQL: String {
            switch self {
            case .readCommitted: "BEGIN ISOLATION LEVEL READ COMMITTED"
            case .repeatableReadReadOnly: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
            case .serializable: "BEGIN ISOLATION LEVEL SERIALIZABLE"
            }
        }
    }

    /// Runs `body` in a transaction: commits when it returns; when it throws, rolls back and
    /// rethrows the same error.
    ///
    /// When the connection is already in a transaction, `body` runs in a SAVEPOINT instead
    /// (`mode` is then irrelevant): a throw rolls back only the nested work. A body that
    /// swallowed a statement's error cannot commit (PostgreSQL ignores everything after an
    /// error): the transaction is rolled back and an error says so.
    @discardableResult
    ///
    /// `statementTimeout`: the `statement_timeout` of this transaction's statements (`SET LOCAL`,
    /// sent with the `BEGIN` in one round trip; rounded up to whole milliseconds), instead of
    /// the session's; nil keeps the session's. Ignored in a savepoint.
    public func transaction<T>(_ mode: TransactionMode, statementTimeout: Duration? = nil, _ body: () throws -> T) throws -> T {
        if isInTransaction {
            return try savepoint(body)
        }
        // Statements queued before the transaction are not part of it.
        try sendQueued(then: nil)
        if let statementTimeout {
            // A number, never a value from outside, in the SQL text. Sent at once, with the BEGIN:
            // in a pipeline, PostgreSQL before 17 arms a statement's timer when the messages
            // before it arrive, so a SET LOCAL would not yet bound the statement sent with it.
            let milliseconds = max(1, statementTimeout.milliseconds + (statementTimeout.nanoseconds % 1_000_000 == 0 ? 0 : 1))
            try execute("\(mode.beginSQL); SET LOCAL statement_timeout = \(milliseconds)")
        } else {
            // The BEGIN goes with the body's first statement, in its round trip.
            queued.append(.plain(mode.beginSQL))
            pendingBegin = queued.count
        }
        let result: T
        do {
            result = try body()
        } catch {
            rollbackAfterError()
            throw error
        }
        if isInFailedTransaction {
            rollbackAfterError()
            throw PostgresError(kind: .other, message: "the transaction failed (a statement's error was caught) and was rolled back")
        }
        if pendingBegin != nil && pendingBegin == queued.count {
            // The body sent nothing: neither did the transaction.
            discardQueued()
            return result
        }
        do {
            // With the statements the body queued (runLater), in one round trip.
            try execute("COMMIT")
        } catch {
            // A failed COMMIT ends the transaction; ROLLBACK only if the server says one is open.
            rollbackAfterError()
            throw error
        }
        return result
    }

    /// The SAVEPOINT goes with the body's first statement and the RELEASE with its last queued
    /// ones (a queued statement's error then fails the savepoint too): a body that sends one
    /// statement costs two round trips, one that sends none costs none.
    private func savepoint<T>(_ body: () throws -> T) throws -> T {
        let name = "bl_sp\(nextStatementName())"
        queued.append(.plain("SAVEPOINT \(name)"))
        // The queue is only ever emptied whole (sent or dropped), which moves its generation:
        // while it has not moved, the SAVEPOINT and everything after it are still queued.
        let start = queued.count - 1
        let generation = queueGeneration
        let isUnsent = { self.queueGeneration == generation }
        do {
            let result = try body()
            if isUnsent() && queued.count == start + 1 {
                queued.removeLast()
            } else {
                try execute("RELEASE SAVEPOINT \(name)")
            }
            return result
        } catch {
            // The body's error is the one worth reporting; if the rollback fails, the outer
            // transaction fails in turn. What the body queued goes with it.
            if isUnsent() {
                queued.removeSubrange(min(start, queued.count)...)
            } else {
                discardQueued()
                if !isBroken { try? execute("ROLLBACK TO SAVEPOINT \(name); RELEASE SAVEPOINT \(name)") }
            }
            throw error
        }
    }

    private func rollbackAfterError() {
        // Queued statements are never sent; a BEGIN still among them opened nothing.
        discardQueued()
        guard !isBroken, isInTransaction else { return }
        // Report the original error; a connection whose ROLLBACK fails is broken, and the
        // server rolls back when it closes.
        try? execute("ROLLBACK")
    }
}
