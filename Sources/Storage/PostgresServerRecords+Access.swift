import Foundation
import Postgres
import ServerRecords

/// The write-protection state (token hash, failed attempts per client address) shared by every
/// instance. Every change runs under the `access` signal's row lock and bumps it, so lockouts
/// made through one instance apply on all of them.
extension PostgresServerRecords: AccessStore {
    public func tokenHash() throws -> TokenHash? {
        try pool.withConnection { connection in
            try connection.firstRow(PostgresRecordsSQL.tokenHash) { row in
                TokenHash(algorithm: try row.string(0), salt: try row.blob(1), hash: try row.blob(2), iterations: try row.int(3))
            }
        }
    }

    public func setTokenHash(_ hash: TokenHash?) throws {
        try changing(PostgresSchema.Signal.access) { connection in
            if let hash {
                try connection.run(PostgresRecordsSQL.saveTokenHash, [
                    .text(hash.algorithm), .bytes(hash.salt), .bytes(hash.hash), .integer(Int64(hash.iterations)),
                    .integer(Milliseconds.from(Date())),
                ])
            } else {
                try connection.run(PostgresRecordsSQL.deleteTokenHash)
            }
            try connection.run(PostgresRecordsSQL.deleteEveryFailure)
            return ((), true)
        }
    }

    public func failedAttempts(client: String) throws -> FailedAttempts? {
        try pool.withConnection { connection in
            try connection.firstRow(PostgresRecordsSQL.failure, [.text(client)]) { try StoredRows.failedAttempts(from: $0) }
        }
    }

    public func allFailedAttempts() throws -> [String: FailedAttempts] {
        try pool.withConnection { connection in
            var all: [String: FailedAttempts] = [:]
            try connection.forEachRow(PostgresRecordsSQL.everyFailure) { row in
                all[try row.string(0)] = try StoredRows.failedAttempts(from: row, startingAt: 1)
            }
            return all
        }
    }

    public func pruneFailedAttempts(now: Date, interval: TimeInterval, keeping: Int) throws {
        let nowMS = Milliseconds.from(now)
        let intervalMS = Int64(max(0, min(interval, 1e12)) * 1000)
        try changing(PostgresSchema.Signal.access) { connection in
            let ended = try connection.run(PostgresRecordsSQL.deleteEndedFailures, [.integer(nowMS), .integer(intervalMS)])
            let oldest = try connection.run(PostgresRecordsSQL.deleteOldestFailuresBeyond, [.integer(Int64(max(0, keeping)))])
            return ((), ended + oldest > 0)
        }
    }

    /// Reads, transforms and writes one client's record in one transaction, with the `access`
    /// signal's row and the record's row locked: two instances counting failures for one address
    /// take turns, and neither count is lost.
    @discardableResult
    public func updateFailedAttempts(client: String, _ body: (FailedAttempts?) -> FailedAttempts?) throws -> FailedAttempts? {
        try changing(PostgresSchema.Signal.access) { connection in
            let old = try connection.firstRow(PostgresRecordsSQL.lockedFailure, [.text(client)]) { try StoredRows.failedAttempts(from: $0) }
            let new = body(old)
            guard new != old else { return (new, false) }
            if let new {
                try connection.run(PostgresRecordsSQL.saveFailure, [
                    .text(client), .integer(Int64(new.count)), .integer(Milliseconds.from(new.windowStart)),
                    new.lockedUntil.map { .integer(Milliseconds.from($0)) } ?? .null,
                ])
            } else {
                try connection.run(PostgresRecordsSQL.deleteFailure, [.text(client)])
            }
            return (new, true)
        }
    }

    /// Columns: attempt_count, window_start, locked_until.
}
