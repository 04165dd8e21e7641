import Foundation
import Library
import SQLite

/// `IdempotencyStore` in the same database file: claims commit on their own, before the work
/// they guard, so a crash in between leaves an "in progress" key rather than a duplicate.
extension SQLiteAlbumStore: IdempotencyStore {
    public func begin(key: String, fingerprint: String, now: Date, expiry: TimeInterval) throws -> IdempotencyClaim {
        let nowMS = Milliseconds.from(now)
        let oldest = nowMS - Int64(expiry * 1000)
        return try database.write { db in
            // Expired keys go first, a bounded batch per claim, so the table stays small.
            try db.run(Self.purgeExpired, [.integer(oldest)])
            var existing: (fingerprint: String, status: Int?, headers: String?, body: [UInt8])?
            try db.forEachRow(Self.selectKey, [.text(key)]) { row in
                existing = (try row.string(0), row.isNull(1) ? nil : try row.int(1),
                            row.isNull(2) ? nil : try row.string(2), row.isNull(3) ? [] : try row.blob(3))
            }
            guard let existing else {
                try db.run(Self.insertKey, [.text(key), .text(fingerprint), .integer(nowMS)])
                return .claimed
            }
            guard existing.fingerprint == fingerprint else { return .mismatch }
            guard let status = existing.status else { return .inProgress }
            let headers = (try? JSONDecoder().decode([[String]].self, from: Data((existing.headers ?? "[]").utf8))) ?? []
            return .replay(IdempotentResponse(status: status, headers: headers, body: existing.body))
        }
    }

    public func complete(key: String, response: IdempotentResponse) throws {
        let headers = String(decoding: try JSONEncoder().encode(response.headers), as: UTF8.self)
        try database.write { db in
            try db.run(Self.completeKey, [.text(key), .integer(Int64(response.status)), .text(headers), .blob(response.body)])
        }
    }

    public func release(key: String) throws {
        try database.write { db in try db.run(Self.releaseKey, [.text(key)]) }
    }

    static let purgeExpired =
        "DELETE FROM idempotency_keys WHERE key IN (SELECT key FROM idempotency_keys WHERE created_at < ?1 LIMIT 100)"
    static let selectKey = "SELECT fingerprint, status, headers, body FROM idempotency_keys WHERE key = ?1"
    static let insertKey = "INSERT INTO idempotency_keys (key, fingerprint, created_at) VALUES (?1, ?2, ?3)"
    static let completeKey = "UPDATE idempotency_keys SET status = ?2, headers = ?3, body = ?4 WHERE key = ?1"
    static let releaseKey = "DELETE FROM idempotency_keys WHERE key = ?1 AND status IS NULL"
}
