import Foundation
import Postgres
import ServerRecords

/// Idempotency keys shared by every instance: a retried request sent to another instance
/// replays the first answer. Each statement commits on its own, the claim before the work it guards.
extension PostgresServerRecords: IdempotencyStore {
    public func begin(key: String, fingerprint: String, now: Date, expiry: TimeInterval) throws -> IdempotencyClaim {
        let nowMS = Milliseconds.from(now)
        let oldest = nowMS - Int64(expiry * 1000)
        return try pool.withConnection { connection in
            // Expired keys go first, a bounded batch per claim, in a statement of its own (so a
            // purge never holds rows while this claim waits for one).
            try connection.run(PostgresRecordsSQL.purgeExpiredKeys, [.integer(oldest)])
            // Two tries: the row that made the claim fail may be released before it is read.
            for _ in 0..<2 {
                let claimed = try connection.run(PostgresRecordsSQL.claimKey, [
                    .text(key), .text(fingerprint), .integer(nowMS), .integer(oldest),
                ])
                if claimed == 1 { return .claimed }
                if let claim = try Self.existingClaim(connection, key: key, fingerprint: fingerprint) { return claim }
            }
            return .inProgress
        }
    }

    public func complete(key: String, response: IdempotentResponse) throws {
        let headers = String(decoding: try JSONEncoder().encode(response.headers), as: UTF8.self)
        try pool.withConnection { connection in
            _ = try connection.run(PostgresRecordsSQL.completeKey, [
                .text(key), .integer(Int64(response.status)), .text(headers), .bytes(response.body),
            ])
        }
    }

    public func release(key: String) throws {
        try pool.withConnection { connection in
            _ = try connection.run(PostgresRecordsSQL.releaseKey, [.text(key)])
        }
    }

    /// What is known about a key someone else holds (`nil` when it is gone).
    private static func existingClaim(_ connection: PostgresConnection, key: String, fingerprint: String) throws -> IdempotencyClaim? {
        let existing = try connection.firstRow(PostgresRecordsSQL.idempotencyKey, [.text(key)]) { row in
            (fingerprint: try row.string(0), status: row.isNull(1) ? nil : try row.int(1),
             headers: row.isNull(2) ? nil : try row.string(2), body: row.isNull(3) ? [] : try row.blob(3))
        }
        guard let existing else { return nil }
        guard existing.fingerprint == fingerprint else { return .mismatch }
        guard let status = existing.status else { return .inProgress }
        let headers = (try? JSONDecoder().decode([[String]].self, from: Data((existing.headers ?? "[]").utf8))) ?? []
        return .replay(IdempotentResponse(status: status, headers: headers, body: existing.body))
    }
}
