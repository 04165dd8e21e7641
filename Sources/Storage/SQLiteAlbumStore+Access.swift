import Foundation
import SQLite
import ServerRecords

/// The write-protection state (token hash, failed attempts per client address), in the same
/// database (migration v5): ServerRecords' `AccessStore`.
extension SQLiteAlbumStore: AccessStore {
    public func tokenHash() throws -> TokenHash? {
        try database.read { db in
            try db.firstRow(SQL.tokenHash) { row in
                TokenHash(algorithm: try row.string(0), salt: try row.blob(1), hash: try row.blob(2), iterations: try row.int(3))
            }
        }
    }

    public func setTokenHash(_ hash: TokenHash?) throws {
        try database.write { db in
            if let hash {
                try db.run(SQL.saveTokenHash, [
                    .text(hash.algorithm), .blob(hash.salt), .blob(hash.hash), .integer(Int64(hash.iterations)),
                    .integer(Milliseconds.from(Date())),
                ])
            } else {
                try db.run(SQL.deleteTokenHash)
            }
            try db.run(SQL.deleteEveryFailure)
        }
    }

    public func failedAttempts(client: String) throws -> FailedAttempts? {
        try database.read { db in try Self.failures(db, client) }
    }

    public func allFailedAttempts() throws -> [String: FailedAttempts] {
        try database.read { db in
            var all: [String: FailedAttempts] = [:]
            var rows = try db.cursor(SQL.everyFailure)
            while let row = try rows.next() {
                all[try row.string(0)] = try StoredRows.failedAttempts(from: row, startingAt: 1)
            }
            return all
        }
    }

    public func pruneFailedAttempts(now: Date, interval: TimeInterval, keeping: Int) throws {
        let nowMS = Milliseconds.from(now)
        let intervalMS = Int64(max(0, min(interval, 1e12)) * 1000)
        try database.write { db in
            try db.run(SQL.deleteEndedFailures, [.integer(nowMS), .integer(intervalMS)])
            try db.run(SQL.deleteOldestFailuresBeyond, [.integer(Int64(max(0, keeping)))])
        }
    }

    @discardableResult
    public func updateFailedAttempts(client: String, _ body: (FailedAttempts?) -> FailedAttempts?) throws -> FailedAttempts? {
        try database.write { db in
            let old = try Self.failures(db, client)
            let new = body(old)
            guard new != old else { return new }
            if let new {
                try db.run(SQL.saveFailure, [
                    .text(client), .integer(Int64(new.count)), .integer(Milliseconds.from(new.windowStart)),
                    new.lockedUntil.map { .integer(Milliseconds.from($0)) } ?? .null,
                ])
            } else {
                try db.run(SQL.deleteFailure, [.text(client)])
            }
            return new
        }
    }

    private static func failures(_ db: Connection, _ client: String) throws -> FailedAttempts? {
        try db.firstRow(SQL.failure, [.text(client)]) { try StoredRows.failedAttempts(from: $0) }
    }
}
