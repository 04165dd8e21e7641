import Foundation
import Postgres
import ServerRecords

/// What the server keeps besides albums (idempotency keys, settings, the token hash and failed
/// attempts, secrets) in a PostgreSQL database several instances share: ServerRecords' stores
/// and Library's `SettingsStore` over a `PostgresPool`, with the SQLite store's semantics.
///
/// Across instances: a key is claimed by exactly one of several racing `begin`s (the claim is
/// one `INSERT … ON CONFLICT`), read-modify-write updates run in one transaction with the
/// state's rows locked, and every change to settings, the token hash or failed attempts bumps
/// its `server_signals` row in the same transaction, so `signalGeneration()` (one statement)
/// tells another instance that its in-memory copies are stale.
///
/// A `PostgresError` (the database unreachable, the pool exhausted) is thrown unchanged, so the
/// server can answer 503. The schema is `PostgresSchema`'s; `init(pool:)` does not migrate
/// (the album store, or `migrating(pool:)`, does).
public final class PostgresServerRecords: Sendable {
    public let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Records over `pool`, after applying the pending schema migrations (under the advisory lock).
    public static func migrating(pool: PostgresPool) throws -> PostgresServerRecords {
        try PostgresSchema.migrate(pool: pool)
        return PostgresServerRecords(pool: pool)
    }

    /// A number that moves whenever settings, the token hash or failed attempts change through
    /// any instance (the sum of the `server_signals` generations, which only grow). One statement.
    public func signalGeneration() throws -> Int64 {
        try pool.withConnection { connection in
            try connection.scalar(PostgresRecordsSQL.signalGeneration, as: Int64.self) ?? 0
        }
    }

    /// Each signal's generation by name (`PostgresSchema.Signal`): which kind of state moved.
    public func signalGenerations() throws -> [String: Int64] {
        try pool.withConnection { connection in
            var generations: [String: Int64] = [:]
            try connection.forEachRow(PostgresRecordsSQL.signals) { row in
                generations[try row.string(0)] = try row.int64(1)
            }
            return generations
        }
    }

    /// Runs `body` in a READ COMMITTED transaction that first locks the signal row `signal`, so
    /// writers of one kind of state take their turns; bumps the signal when `body` says it
    /// changed something.
    func changing<T>(_ signal: String, _ body: (PostgresConnection) throws -> (result: T, changed: Bool)) throws -> T {
        try pool.withConnection { connection in
            try connection.transaction(.readCommitted) {
                _ = try connection.query(PostgresRecordsSQL.lockSignal, [.text(signal)]) { _ in () }
                let outcome = try body(connection)
                if outcome.changed {
                    try connection.run(PostgresRecordsSQL.bumpSignal, [.text(signal)])
                }
                return outcome.result
            }
        }
    }
}

/// Server secrets (`cursor`: the key that seals paging cursors), shared by every instance.
extension PostgresServerRecords: SecretStore {
    public func secret(named name: String, orStore candidate: [UInt8]) throws -> [UInt8] {
        try pool.withConnection { connection in
            // A racing insert of the same name waits for the first and then does nothing.
            try connection.run(PostgresRecordsSQL.insertSecret, [
                .text(name), .bytes(candidate), .integer(Milliseconds.from(Date())),
            ])
            guard let value = try connection.firstRow(PostgresRecordsSQL.secret, [.text(name)], { try $0.blob(0) }) else {
                throw StorageError(.corrupt, "the secret \(name) vanished while it was stored")
            }
            return value
        }
    }
}
