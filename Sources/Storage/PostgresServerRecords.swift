import Foundation
import Library
import Postgres
import ServerRecords

/// What the server keeps besides albums (idempotency keys, settings, the token hash and failed
/// attempts, secrets) in a PostgreSQL database several instances share: ServerRecords' stores
/// and Library's `SettingsStore` over a `PostgresPool`, running the same statements as the
/// SQLite store (`ServerRecordsSQL`) through the album engine's session.
///
/// Across instances: a key is claimed by exactly one of several racing `begin`s (the claim is
/// one `INSERT … ON CONFLICT`), read-modify-write updates run in one transaction with the
/// state's rows locked, and every change to settings, the token hash or failed attempts bumps
/// its `server_signals` row in the same transaction, so `signalGeneration()` (one statement)
/// tells another instance that its in-memory copies are stale. Idempotency keys and secrets
/// commit statement by statement, the claim before the work it guards.
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
            try connection.scalar(Self.signalGeneration, as: Int64.self) ?? 0
        }
    }

    /// Each signal's generation by name (`PostgresSchema.Signal`): which kind of state moved.
    public func signalGenerations() throws -> [String: Int64] {
        try pool.withConnection { connection in
            var generations: [String: Int64] = [:]
            try connection.forEachRow(Self.signals) { row in
                generations[try row.string(0)] = try row.int64(1)
            }
            return generations
        }
    }

    /// Runs `body` on a pooled connection, each statement committing on its own.
    private func autocommit<T>(_ body: (PostgresSession) throws -> T) throws -> T {
        try pool.withConnection { connection in try body(PostgresSession(connection)) }
    }

    /// Runs `body` in a READ COMMITTED transaction that first locks the signal row `signal`, so
    /// writers of one kind of state take their turns; bumps the signal when `body` says it
    /// changed something.
    private func changing<T>(_ signal: String, _ body: (PostgresSession) throws -> (result: T, changed: Bool)) throws -> T {
        try pool.withConnection { connection in
            try connection.transaction(.readCommitted) {
                _ = try connection.query(Self.lockSignal, [.text(signal)]) { _ in () }
                let outcome = try body(PostgresSession(connection))
                if outcome.changed {
                    try connection.run(Self.bumpSignal, [.text(signal)])
                }
                return outcome.result
            }
        }
    }

    // MARK: The signal statements (PostgreSQL only)

    /// Locks the signal row of one kind of state (settings, access) for the transaction.
    private static let lockSignal = "SELECT generation FROM server_signals WHERE name = $1 FOR UPDATE"
    private static let bumpSignal = "UPDATE server_signals SET generation = generation + 1 WHERE name = $1"
    /// Moves whenever any signal moves (generations only grow).
    private static let signalGeneration = "SELECT COALESCE(SUM(generation), 0)::bigint FROM server_signals"
    private static let signals = "SELECT name, generation FROM server_signals"
}

/// The settings document; each change bumps the `settings` signal. An update reads and writes
/// under that row's lock: a change another instance makes meanwhile waits for this one (and
/// then reads what this one stored), it is never overwritten.
extension PostgresServerRecords: SettingsStore {
    public func loadSettings() throws -> [UInt8]? {
        try autocommit { try ServerRecordsSQL.settingsDocument($0) }
    }

    public func saveSettings(_ json: [UInt8]) throws {
        try changing(PostgresSchema.Signal.settings) { session in
            try ServerRecordsSQL.storeSettings(json, session)
            return ((), true)
        }
    }

    public func updateSettings(_ body: ([UInt8]?) throws -> [UInt8]?) throws {
        try changing(PostgresSchema.Signal.settings) { ((), try ServerRecordsSQL.updateSettings($0, body)) }
    }
}

/// The write-protection state, shared by every instance. Every change runs under the `access`
/// signal's row lock and bumps it, so lockouts made through one instance apply on all of them;
/// two instances counting failures for one address take turns, and neither count is lost.
extension PostgresServerRecords: AccessStore {
    public func accessKeys() throws -> [AccessKey] {
        try autocommit { try ServerRecordsSQL.accessKeys($0) }
    }

    public func saveAccessKey(_ key: AccessKey) throws {
        try changing(PostgresSchema.Signal.access) { session in
            try ServerRecordsSQL.saveAccessKey(key, session)
            return ((), true)
        }
    }

    public func changeAccessKeys<T>(_ body: ([AccessKey]) throws -> (change: AccessKeyChange, result: T)) throws -> T {
        try changing(PostgresSchema.Signal.access) { session in try ServerRecordsSQL.changeAccessKeys(session, body) }
    }

    @discardableResult
    public func deleteAccessKey(id: String) throws -> Bool {
        try changing(PostgresSchema.Signal.access) { session in
            let deleted = try ServerRecordsSQL.deleteAccessKey(id: id, session)
            return (deleted, deleted)
        }
    }

    public func failedAttempts(client: String) throws -> FailedAttempts? {
        try autocommit { try ServerRecordsSQL.failedAttempts(client: client, $0) }
    }

    public func allFailedAttempts() throws -> [String: FailedAttempts] {
        try autocommit { try ServerRecordsSQL.allFailedAttempts($0) }
    }

    public func pruneFailedAttempts(now: Date, interval: TimeInterval, keeping: Int) throws {
        try changing(PostgresSchema.Signal.access) {
            ((), try ServerRecordsSQL.pruneFailedAttempts(now: now, interval: interval, keeping: keeping, $0))
        }
    }

    @discardableResult
    public func updateFailedAttempts(client: String, _ body: (FailedAttempts?) -> FailedAttempts?) throws -> FailedAttempts? {
        try changing(PostgresSchema.Signal.access) { try ServerRecordsSQL.updateFailedAttempts(client: client, $0, body) }
    }
}

/// Idempotency keys shared by every instance: a retried request sent to another instance
/// replays the first answer.
extension PostgresServerRecords: IdempotencyStore {
    public func lookup(key: String, fingerprint: String, now: Date, expiry: TimeInterval) throws -> IdempotencyClaim? {
        try autocommit { session in
            let known = try ServerRecordsSQL.lookup(key: key, fingerprint: fingerprint, now: now, expiry: expiry, session)
            // A replayed answer (or a "was saved") shows the primary's state: its position goes
            // back with it (nothing without read replicas).
            if known != nil { try PostgresReplicas.record(session.connection) }
            return known
        }
    }

    public func complete(key: String, response: IdempotentResponse) throws {
        try autocommit { try ServerRecordsSQL.complete(key: key, response: response, $0) }
    }
}

/// Server secrets (`cursor`: the key that seals paging cursors), shared by every instance.
extension PostgresServerRecords: SecretStore {
    public func secret(named name: String, orStore candidate: [UInt8]) throws -> [UInt8] {
        try autocommit { try ServerRecordsSQL.secret(named: name, orStore: candidate, $0) }
    }
}
