import Foundation
import Library
import SQLite

/// The settings document and the write-protection state, in the same database (migration v5).
extension SQLiteAlbumStore: SettingsStore, AccessStore {
    public func loadSettings() throws -> [UInt8]? {
        try database.read { db in
            try db.firstRow("SELECT document FROM settings WHERE id = 1") { row in Array(try row.string(0).utf8) }
        }
    }

    public func saveSettings(_ json: [UInt8]) throws {
        let text = String(decoding: json, as: UTF8.self)
        try database.write { db in
            try db.run("""
                INSERT INTO settings (id, document, updated_at) VALUES (1, ?1, ?2)
                ON CONFLICT (id) DO UPDATE SET document = excluded.document, updated_at = excluded.updated_at
                """, [.text(text), .integer(Milliseconds.from(Date()))])
        }
    }

    public func updateSettings(_ body: ([UInt8]?) throws -> [UInt8]?) throws {
        try database.write { db in
            let stored = try db.firstRow("SELECT document FROM settings WHERE id = 1") { row in Array(try row.string(0).utf8) }
            guard let next = try body(stored) else { return }
            try db.run("""
                INSERT INTO settings (id, document, updated_at) VALUES (1, ?1, ?2)
                ON CONFLICT (id) DO UPDATE SET document = excluded.document, updated_at = excluded.updated_at
                """, [.text(String(decoding: next, as: UTF8.self)), .integer(Milliseconds.from(Date()))])
        }
    }

    /// A watch on commits made by any other connection (another process, or this store's own
    /// writer): for a poller that keeps in-memory copies of stored state fresh.
    public func makeChangeWatch() throws -> DatabaseChangeWatch {
        try DatabaseChangeWatch(path: path)
    }

    public func tokenHash() throws -> TokenHash? {
        try database.read { db in
            try db.firstRow("SELECT algorithm, salt, hash, iterations FROM access_token WHERE id = 1") { row in
                TokenHash(algorithm: try row.string(0), salt: try row.blob(1), hash: try row.blob(2), iterations: try row.int(3))
            }
        }
    }

    public func setTokenHash(_ hash: TokenHash?) throws {
        try database.write { db in
            if let hash {
                try db.run("""
                    INSERT INTO access_token (id, algorithm, salt, hash, iterations, updated_at) VALUES (1, ?1, ?2, ?3, ?4, ?5)
                    ON CONFLICT (id) DO UPDATE SET algorithm = excluded.algorithm, salt = excluded.salt, hash = excluded.hash,
                        iterations = excluded.iterations, updated_at = excluded.updated_at
                    """, [.text(hash.algorithm), .blob(hash.salt), .blob(hash.hash), .integer(Int64(hash.iterations)),
                          .integer(Milliseconds.from(Date()))])
            } else {
                try db.run("DELETE FROM access_token")
            }
            try db.run("DELETE FROM access_failures")
        }
    }

    public func failedAttempts(client: String) throws -> FailedAttempts? {
        try database.read { db in try Self.failures(db, client) }
    }

    public func allFailedAttempts() throws -> [String: FailedAttempts] {
        try database.read { db in
            var all: [String: FailedAttempts] = [:]
            try db.forEachRow("SELECT client, attempt_count, window_start, locked_until FROM access_failures") { row in
                all[try row.string(0)] = FailedAttempts(
                    count: try row.int(1), windowStart: Milliseconds.date(try row.int64(2)),
                    lockedUntil: row.isNull(3) ? nil : Milliseconds.date(try row.int64(3)))
            }
            return all
        }
    }

    public func pruneFailedAttempts(now: Date, interval: TimeInterval, keeping: Int) throws {
        let nowMS = Milliseconds.from(now)
        let intervalMS = Int64(max(0, min(interval, 1e12)) * 1000)
        try database.write { db in
            try db.run("""
                DELETE FROM access_failures
                WHERE (locked_until IS NOT NULL AND locked_until <= ?1)
                   OR (locked_until IS NULL AND window_start <= ?1 - ?2)
                """, [.integer(nowMS), .integer(intervalMS)])
            try db.run("""
                DELETE FROM access_failures WHERE client IN
                    (SELECT client FROM access_failures ORDER BY window_start DESC LIMIT -1 OFFSET ?1)
                """, [.integer(Int64(max(0, keeping)))])
        }
    }

    @discardableResult
    public func updateFailedAttempts(client: String, _ body: (FailedAttempts?) -> FailedAttempts?) throws -> FailedAttempts? {
        try database.write { db in
            let old = try Self.failures(db, client)
            let new = body(old)
            guard new != old else { return new }
            if let new {
                try db.run("""
                    INSERT INTO access_failures (client, attempt_count, window_start, locked_until) VALUES (?1, ?2, ?3, ?4)
                    ON CONFLICT (client) DO UPDATE SET attempt_count = excluded.attempt_count,
                        window_start = excluded.window_start, locked_until = excluded.locked_until
                    """, [.text(client), .integer(Int64(new.count)), .integer(Milliseconds.from(new.windowStart)),
                          new.lockedUntil.map { .integer(Milliseconds.from($0)) } ?? .null])
            } else {
                try db.run("DELETE FROM access_failures WHERE client = ?1", [.text(client)])
            }
            return new
        }
    }

    private static func failures(_ db: Connection, _ client: String) throws -> FailedAttempts? {
        try db.firstRow("SELECT attempt_count, window_start, locked_until FROM access_failures WHERE client = ?1", [.text(client)]) { row in
            FailedAttempts(count: try row.int(0), windowStart: Milliseconds.date(try row.int64(1)),
                           lockedUntil: row.isNull(2) ? nil : Milliseconds.date(try row.int64(2)))
        }
    }
}

/// Tells whether the database changed since the last look (`PRAGMA data_version` on a
/// connection of its own, which moves whenever any other connection commits). One thread at a
/// time: it is meant for one polling thread.
public final class DatabaseChangeWatch: @unchecked Sendable {
    private let connection: Connection
    private var last: Int64

    init(path: String) throws {
        connection = try Connection(path: path, mode: .readOnly)
        last = 0
        last = try version()
    }

    private func version() throws -> Int64 {
        try connection.firstRow("PRAGMA data_version") { row in try row.int64(0) } ?? 0
    }

    /// Whether anything was committed since the previous call (or since the watch was made).
    public func hasChanged() throws -> Bool {
        let now = try version()
        defer { last = now }
        return now != last
    }
}
