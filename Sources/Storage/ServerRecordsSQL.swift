import Foundation
import Library
import ServerRecords

/// The server's own records (settings, API keys and failed attempts, idempotency keys,
/// secrets), written once over the album engine's `SQLSession`: each function is the work of
/// one `ServerRecords` (or `SettingsStore`) call inside whatever transaction the engine opens
/// for it. `SQLiteAlbumStore` runs them on its writer and readers; `PostgresServerRecords` on
/// pooled connections, in a transaction that locks and bumps the state's `server_signals` row
/// where several instances must see the change (the `changed` results say when to bump).
///
/// The SQL is the same text on both engines (`?N` placeholders; the PostgreSQL session rewrites
/// them); what must differ is in `SQLDialect` (row locks, an offset without a limit).
enum ServerRecordsSQL {
    // MARK: Settings

    static func settingsDocument(_ session: some SQLSession) throws -> [UInt8]? {
        try session.firstRow(Statements.settingsDocument, []) { row in Array(try row.string(0).utf8) }
    }

    static func storeSettings(_ json: [UInt8], _ session: some SQLSession) throws {
        try session.run(Statements.saveSettingsDocument, [
            .text(String(decoding: json, as: UTF8.self)), .integer(Milliseconds.from(Date())),
        ])
    }

    /// Reads the document, lets `body` make the next one and stores it; false when `body`
    /// returned nil (nothing stored).
    static func updateSettings(_ session: some SQLSession, _ body: ([UInt8]?) throws -> [UInt8]?) throws -> Bool {
        guard let next = try body(try settingsDocument(session)) else { return false }
        try storeSettings(next, session)
        return true
    }

    // MARK: Access

    static func accessKeys(_ session: some SQLSession) throws -> [AccessKey] {
        var keys: [AccessKey] = []
        try session.forEachRow(Statements.accessKeys, []) { keys.append(try StoredRows.accessKey(from: $0)) }
        return keys
    }

    /// Reads the keys, lets `body` decide a change and makes it; `changed` says whether a row
    /// was written.
    static func changeAccessKeys<T>(
        _ session: some SQLSession, _ body: ([AccessKey]) throws -> (change: AccessKeyChange, result: T)
    ) throws -> (result: T, changed: Bool) {
        let (change, result) = try body(try accessKeys(session))
        switch change {
        case .none: return (result, false)
        case let .save(key): try saveAccessKey(key, session)
        case let .delete(id): return (result, try deleteAccessKey(id: id, session))
        }
        return (result, true)
    }

    /// Stores `key` (replacing the one with its id); a new secret for the token of earlier
    /// versions clears every failure record with it (as setting the token always did; a new
    /// name or expiry of it clears nothing).
    static func saveAccessKey(_ key: AccessKey, _ session: some SQLSession) throws {
        let previous = key.id == AccessKey.tokenID ? try accessKeys(session).first { $0.id == key.id } : nil
        try session.run(Statements.saveAccessKey, [
            .text(key.id), .text(key.name), .text(key.scopes.map(\.rawValue).joined(separator: ",")),
            key.libraries.map { .text($0.joined(separator: ",")) } ?? .null,
            key.expiresAt.map { .integer(Milliseconds.from($0)) } ?? .null, .integer(Milliseconds.from(key.createdAt)),
            .text(key.secret.algorithm), .blob(key.secret.salt), .blob(key.secret.hash), .integer(Int64(key.secret.iterations)),
        ])
        if key.id == AccessKey.tokenID, previous?.secret != key.secret { try session.run(Statements.deleteEveryFailure, []) }
    }

    /// Removes the key `id` (the token of earlier versions clears every failure record with it);
    /// false when there was none.
    static func deleteAccessKey(id: String, _ session: some SQLSession) throws -> Bool {
        try session.run(Statements.deleteAccessKey, [.text(id)])
        let deleted = session.changes > 0
        if deleted, id == AccessKey.tokenID { try session.run(Statements.deleteEveryFailure, []) }
        return deleted
    }

    /// One client's record; with `locking`, its row stays locked for the transaction where the
    /// engine has row locks.
    static func failedAttempts(client: String, locking: Bool = false, _ session: some SQLSession) throws -> FailedAttempts? {
        let sql = locking ? session.dialect.lockingRows(Statements.failure) : Statements.failure
        return try session.firstRow(sql, [.text(client)]) { try StoredRows.failedAttempts(from: $0) }
    }

    static func allFailedAttempts(_ session: some SQLSession) throws -> [String: FailedAttempts] {
        var all: [String: FailedAttempts] = [:]
        try session.forEachRow(Statements.everyFailure, []) { row in
            all[try row.string(0)] = try StoredRows.failedAttempts(from: row, startingAt: 1)
        }
        return all
    }

    /// Removes the records whose lock or window has ended and all but the `keeping` newest;
    /// true when a row went.
    static func pruneFailedAttempts(now: Date, interval: TimeInterval, keeping: Int, _ session: some SQLSession) throws -> Bool {
        let intervalMS = Int64(max(0, min(interval, 1e12)) * 1000)
        try session.run(Statements.deleteEndedFailures, [.integer(Milliseconds.from(now)), .integer(intervalMS)])
        let ended = session.changes
        try session.run(session.dialect.deleteOldestFailuresBeyond, [.integer(Int64(max(0, keeping)))])
        return ended + session.changes > 0
    }

    /// Reads one client's record (locked), transforms it with `body` and writes the result;
    /// `changed` is false when `body` gave back what was stored.
    static func updateFailedAttempts(
        client: String, _ session: some SQLSession, _ body: (FailedAttempts?) -> FailedAttempts?
    ) throws -> (result: FailedAttempts?, changed: Bool) {
        let old = try failedAttempts(client: client, locking: true, session)
        let new = body(old)
        guard new != old else { return (new, false) }
        if let new {
            try session.run(Statements.saveFailure, [
                .text(client), .integer(Int64(new.count)), .integer(Milliseconds.from(new.windowStart)),
                new.lockedUntil.map { .integer(Milliseconds.from($0)) } ?? .null,
            ])
        } else {
            try session.run(Statements.deleteFailure, [.text(client)])
        }
        return (new, true)
    }

    // MARK: Idempotency keys

    /// Claims the key inside the calling write's transaction: purges a bounded batch of
    /// expired keys first, then inserts the key, or takes it over when it has expired but is
    /// not purged yet. On PostgreSQL a claim racing another transaction's uncommitted claim of
    /// the key waits for it; when that one commits, or the key is live, this throws
    /// ``IdempotencyKeyTaken`` (and the write rolls back).
    static func claim(_ claim: IdempotencyKeyClaim, _ session: some SQLSession) throws {
        let nowMS = Milliseconds.from(claim.now)
        let oldest = nowMS - Int64(claim.expiry * 1000)
        try session.run(session.dialect.purgeExpiredKeys, [.integer(oldest)])
        try session.run(Statements.claimKey, [.text(claim.key), .text(claim.fingerprint), .integer(nowMS), .integer(oldest)])
        guard session.changes == 1 else { throw IdempotencyKeyTaken() }
    }

    /// What a live key says about a request with `fingerprint` (nil: unknown or expired).
    static func lookup(key: String, fingerprint: String, now: Date, expiry: TimeInterval, _ session: some SQLSession) throws
        -> IdempotencyClaim?
    {
        let oldest = Milliseconds.from(now) - Int64(expiry * 1000)
        let existing = try session.firstRow(Statements.idempotencyKey, [.text(key)]) { row in
            (fingerprint: try row.string(0), status: try row.optionalInt(1),
             headers: try row.optionalString(2), body: row.isNull(3) ? [] : try row.blob(3), createdAt: try row.int64(4))
        }
        guard let existing, existing.createdAt >= oldest else { return nil }
        guard existing.fingerprint == fingerprint else { return .mismatch }
        guard let status = existing.status else { return .inProgress }
        let headers = (try? JSONDecoder().decode([[String]].self, from: Data((existing.headers ?? "[]").utf8))) ?? []
        return .replay(IdempotentResponse(status: status, headers: headers, body: existing.body))
    }

    static func complete(key: String, response: IdempotentResponse, _ session: some SQLSession) throws {
        let headers = String(decoding: try JSONEncoder().encode(response.headers), as: UTF8.self)
        try session.run(Statements.completeKey, [.text(key), .integer(Int64(response.status)), .text(headers), .blob(response.body)])
    }

    // MARK: Secrets

    /// The secret called `name`: the stored one, or else `candidate`, stored now. Whoever
    /// stores first wins (a racing insert of the same name waits and then does nothing).
    static func secret(named name: String, orStore candidate: [UInt8], _ session: some SQLSession) throws -> [UInt8] {
        try session.run(Statements.insertSecret, [.text(name), .blob(candidate), .integer(Milliseconds.from(Date()))])
        guard let value = try session.firstRow(Statements.secret, [.text(name)], { try $0.blob(0) }) else {
            throw StorageError(.corrupt, "the secret \(name) vanished while it was stored")
        }
        return value
    }

    // MARK: Statements

    /// The records' statements that read the same on both engines. Constant text; values are
    /// always bound.
    enum Statements {
        static let idempotencyKey = "SELECT fingerprint, status, headers, body, created_at FROM idempotency_keys WHERE key = ?1"
        /// Inserts a new key, or takes over one older than ?4 (expired, not purged yet); changes
        /// no row when the key is live, whoever holds it.
        static let claimKey = """
            INSERT INTO idempotency_keys (key, fingerprint, created_at) VALUES (?1, ?2, ?3)
            ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, created_at = excluded.created_at,
                status = NULL, headers = NULL, body = NULL
            WHERE idempotency_keys.created_at < ?4
            """
        static let completeKey = "UPDATE idempotency_keys SET status = ?2, headers = ?3, body = ?4 WHERE key = ?1"

        static let settingsDocument = "SELECT document FROM settings WHERE id = 1"
        static let saveSettingsDocument = """
            INSERT INTO settings (id, document, updated_at) VALUES (1, ?1, ?2)
            ON CONFLICT (id) DO UPDATE SET document = excluded.document, updated_at = excluded.updated_at
            """

        static let accessKeys = """
            SELECT id, name, scopes, libraries, expires_at, created_at, algorithm, salt, hash, iterations FROM access_keys ORDER BY id
            """
        static let saveAccessKey = """
            INSERT INTO access_keys (id, name, scopes, libraries, expires_at, created_at, algorithm, salt, hash, iterations)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
            ON CONFLICT (id) DO UPDATE SET name = excluded.name, scopes = excluded.scopes, libraries = excluded.libraries,
                expires_at = excluded.expires_at, created_at = excluded.created_at, algorithm = excluded.algorithm,
                salt = excluded.salt, hash = excluded.hash, iterations = excluded.iterations
            """
        static let deleteAccessKey = "DELETE FROM access_keys WHERE id = ?1"
        static let deleteEveryFailure = "DELETE FROM access_failures"
        static let failure = "SELECT attempt_count, window_start, locked_until FROM access_failures WHERE client = ?1"
        static let everyFailure = "SELECT client, attempt_count, window_start, locked_until FROM access_failures"
        static let saveFailure = """
            INSERT INTO access_failures (client, attempt_count, window_start, locked_until) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (client) DO UPDATE SET attempt_count = excluded.attempt_count,
                window_start = excluded.window_start, locked_until = excluded.locked_until
            """
        static let deleteFailure = "DELETE FROM access_failures WHERE client = ?1"
        /// Records whose lock (?1 = now) or unlocked window (?2 = its length) has ended.
        static let deleteEndedFailures = """
            DELETE FROM access_failures
            WHERE (locked_until IS NOT NULL AND locked_until <= ?1)
               OR (locked_until IS NULL AND window_start <= ?1 - ?2)
            """

        static let insertSecret =
            "INSERT INTO secrets (name, value, created_at) VALUES (?1, ?2, ?3) ON CONFLICT (name) DO NOTHING"
        static let secret = "SELECT value FROM secrets WHERE name = ?1"
    }
}
