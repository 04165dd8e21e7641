/// How a top-level transaction acquires its lock (see SQLite's BEGIN documentation).
public enum TransactionKind: Sendable {
    /// Locks are taken on first read/write. Use for read snapshots.
    case deferred
    /// Takes the write lock at BEGIN (waiting up to busy_timeout). Use for writes.
    case immediate
    /// Like immediate (in WAL mode readers are not blocked either way).
    case exclusive

    var beginSQL: String {
        switch self {
        case .deferred: "BEGIN DEFERRED"
        case .immediate: "BEGIN IMMEDIATE"
        case .exclusive: "BEGIN EXCLUSIVE"
        }
    }
}

extension Connection {
    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws.
    ///
    /// When the connection is already in a transaction, `body` runs in a SAVEPOINT instead
    /// (`kind` is then irrelevant): a throw rolls back only the nested work, and the outer
    /// transaction decides the final outcome.
    public func transaction<T>(_ kind: TransactionKind = .deferred, _ body: (Connection) throws -> T) throws -> T {
        if isInTransaction {
            return try savepoint(body)
        }
        try run(kind.beginSQL)
        let result: T
        do {
            result = try body(self)
        } catch {
            rollbackAfterError()
            throw error
        }
        do {
            try run("COMMIT")
        } catch {
            rollbackAfterError()
            throw error
        }
        return result
    }

    private func savepoint<T>(_ body: (Connection) throws -> T) throws -> T {
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        let name = "sqlite_swift_sp\(savepointDepth)"
        try run("SAVEPOINT \(name)")
        do {
            let result = try body(self)
            try run("RELEASE \(name)")
            return result
        } catch {
            // Some errors (e.g. SQLITE_FULL) make SQLite roll back the whole transaction itself.
            if isInTransaction {
                // The body's error is the one worth reporting; a failure to roll back the
                // savepoint leaves the outer transaction to fail and roll back in turn.
                try? run("ROLLBACK TO \(name)")
                try? run("RELEASE \(name)")
            }
            throw error
        }
    }

    private func rollbackAfterError() {
        guard isInTransaction else { return } // SQLite may have rolled back already.
        // Report the original error; if ROLLBACK itself fails, SQLite rolls back when the
        // connection is next used or closed, and the next BEGIN reports any problem.
        try? run("ROLLBACK")
    }
}
