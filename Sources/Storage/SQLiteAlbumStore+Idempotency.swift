import Foundation
import SQLite
import ServerRecords

/// ServerRecords' `IdempotencyStore` in the same database file: claims commit on their own,
/// before the work they guard, so a crash in between leaves an "in progress" key rather than a
/// duplicate.
extension SQLiteAlbumStore: IdempotencyStore {
    public func begin(key: String, fingerprint: String, now: Date, expiry: TimeInterval) throws -> IdempotencyClaim {
        let nowMS = Milliseconds.from(now)
        let oldest = nowMS - Int64(expiry * 1000)
        return try database.write { db in
            // Expired keys go first, a bounded batch per claim, so the table stays small.
            try db.run(SQL.purgeExpiredKeys, [.integer(oldest)])
            let existing = try db.firstRow(SQL.idempotencyKey, [.text(key)]) { row in
                (fingerprint: try row.string(0), status: row.isNull(1) ? nil : try row.int(1),
                 headers: row.isNull(2) ? nil : try row.string(2), body: row.isNull(3) ? [] : try row.blob(3))
            }
            guard let existing else {
                try db.run(SQL.claimKey, [.text(key), .text(fingerprint), .integer(nowMS)])
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
            try db.run(SQL.completeKey, [.text(key), .integer(Int64(response.status)), .text(headers), .blob(response.body)])
        }
    }

    public func release(key: String) throws {
        try database.write { db in try db.run(SQL.releaseKey, [.text(key)]) }
    }
}
