/// The statements of `PostgresServerRecords`, in PostgreSQL's own text (`$1` parameters).
///
/// They differ from their SQLite counterparts in `SQL.swift` where several instances share the
/// database: a claim takes over an expired key in the same statement, purges skip rows another
/// instance is deleting, every change to shared server state bumps its `server_signals` row, and
/// writers of one kind of state first lock that row (so they serialise and never deadlock).
/// Constant text; values are always bound.
enum PostgresRecordsSQL {
    // MARK: Signals

    /// Locks the signal row of one kind of state (settings, access) for the transaction.
    static let lockSignal = "SELECT generation FROM server_signals WHERE name = $1 FOR UPDATE"
    static let bumpSignal = "UPDATE server_signals SET generation = generation + 1 WHERE name = $1"
    /// Moves whenever any signal moves (generations only grow).
    static let signalGeneration = "SELECT COALESCE(SUM(generation), 0)::bigint FROM server_signals"
    static let signals = "SELECT name, generation FROM server_signals"

    // MARK: Idempotency keys

    /// Expired keys, a bounded batch at a time, skipping rows another instance holds.
    static let purgeExpiredKeys = """
        DELETE FROM idempotency_keys WHERE key IN (
            SELECT key FROM idempotency_keys WHERE created_at < $1 LIMIT 100 FOR UPDATE SKIP LOCKED)
        """
    /// Claims a key that is new, or expired (older than $4) but not purged yet; no row is
    /// changed when the key is live, whoever holds it.
    static let claimKey = """
        INSERT INTO idempotency_keys (key, fingerprint, created_at) VALUES ($1, $2, $3)
        ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, created_at = excluded.created_at,
            status = NULL, headers = NULL, body = NULL
        WHERE idempotency_keys.created_at < $4
        """
    static let idempotencyKey = "SELECT fingerprint, status, headers, body FROM idempotency_keys WHERE key = $1"
    static let completeKey = "UPDATE idempotency_keys SET status = $2, headers = $3, body = $4 WHERE key = $1"
    static let releaseKey = "DELETE FROM idempotency_keys WHERE key = $1 AND status IS NULL"

    // MARK: Settings

    static let settingsDocument = "SELECT document FROM settings WHERE id = 1"
    static let saveSettingsDocument = """
        INSERT INTO settings (id, document, updated_at) VALUES (1, $1, $2)
        ON CONFLICT (id) DO UPDATE SET document = excluded.document, updated_at = excluded.updated_at
        """

    // MARK: Access

    static let tokenHash = "SELECT algorithm, salt, hash, iterations FROM access_token WHERE id = 1"
    static let saveTokenHash = """
        INSERT INTO access_token (id, algorithm, salt, hash, iterations, updated_at) VALUES (1, $1, $2, $3, $4, $5)
        ON CONFLICT (id) DO UPDATE SET algorithm = excluded.algorithm, salt = excluded.salt, hash = excluded.hash,
            iterations = excluded.iterations, updated_at = excluded.updated_at
        """
    static let deleteTokenHash = "DELETE FROM access_token"
    static let deleteEveryFailure = "DELETE FROM access_failures"
    static let failure = "SELECT attempt_count, window_start, locked_until FROM access_failures WHERE client = $1"
    static let lockedFailure =
        "SELECT attempt_count, window_start, locked_until FROM access_failures WHERE client = $1 FOR UPDATE"
    static let everyFailure = "SELECT client, attempt_count, window_start, locked_until FROM access_failures"
    static let saveFailure = """
        INSERT INTO access_failures (client, attempt_count, window_start, locked_until) VALUES ($1, $2, $3, $4)
        ON CONFLICT (client) DO UPDATE SET attempt_count = excluded.attempt_count,
            window_start = excluded.window_start, locked_until = excluded.locked_until
        """
    static let deleteFailure = "DELETE FROM access_failures WHERE client = $1"
    /// Records whose lock ($1 = now) or unlocked window ($2 = its length) has ended.
    static let deleteEndedFailures = """
        DELETE FROM access_failures
        WHERE (locked_until IS NOT NULL AND locked_until <= $1)
           OR (locked_until IS NULL AND window_start <= $1 - $2)
        """
    /// Keeps the $1 newest windows.
    static let deleteOldestFailuresBeyond = """
        DELETE FROM access_failures WHERE client IN
            (SELECT client FROM access_failures ORDER BY window_start DESC, client OFFSET $1)
        """

    // MARK: Secrets

    static let insertSecret =
        "INSERT INTO secrets (name, value, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING"
    static let secret = "SELECT value FROM secrets WHERE name = $1"
}
