import Foundation
import Library
import SQLite
import ServerRecords

/// The server's own records in the same database file (`ServerRecordsSQL`, shared with
/// PostgreSQL): reads on a reader, every change in one write transaction. Idempotency claims
/// commit on their own, before the work they guard, so a crash in between leaves an
/// "in progress" key rather than a duplicate.
extension SQLiteAlbumStore: AccessStore, IdempotencyStore, SecretStore, SettingsStore {
    // MARK: Settings

    public func loadSettings() throws -> [UInt8]? {
        try database.read { try ServerRecordsSQL.settingsDocument($0) }
    }

    public func saveSettings(_ json: [UInt8]) throws {
        try database.write { try ServerRecordsSQL.storeSettings(json, $0) }
    }

    public func updateSettings(_ body: ([UInt8]?) throws -> [UInt8]?) throws {
        _ = try database.write { try ServerRecordsSQL.updateSettings($0, body) }
    }

    /// A watch on commits made by any other connection (another process, or this store's own
    /// writer): for a poller that keeps in-memory copies of stored state fresh.
    public func makeChangeWatch() throws -> DatabaseChangeWatch {
        try DatabaseChangeWatch(path: path)
    }

    // MARK: Access

    public func accessKeys() throws -> [AccessKey] {
        try database.read { try ServerRecordsSQL.accessKeys($0) }
    }

    public func saveAccessKey(_ key: AccessKey) throws {
        try database.write { try ServerRecordsSQL.saveAccessKey(key, $0) }
    }

    @discardableResult
    public func deleteAccessKey(id: String) throws -> Bool {
        try database.write { try ServerRecordsSQL.deleteAccessKey(id: id, $0) }
    }

    public func changeAccessKeys<T>(_ body: ([AccessKey]) throws -> (change: AccessKeyChange, result: T)) throws -> T {
        try database.write { try ServerRecordsSQL.changeAccessKeys($0, body).result }
    }

    public func failedAttempts(client: String) throws -> FailedAttempts? {
        try database.read { try ServerRecordsSQL.failedAttempts(client: client, $0) }
    }

    public func allFailedAttempts() throws -> [String: FailedAttempts] {
        try database.read { try ServerRecordsSQL.allFailedAttempts($0) }
    }

    public func pruneFailedAttempts(now: Date, interval: TimeInterval, keeping: Int) throws {
        _ = try database.write { try ServerRecordsSQL.pruneFailedAttempts(now: now, interval: interval, keeping: keeping, $0) }
    }

    @discardableResult
    public func updateFailedAttempts(client: String, _ body: (FailedAttempts?) -> FailedAttempts?) throws -> FailedAttempts? {
        try database.write { try ServerRecordsSQL.updateFailedAttempts(client: client, $0, body).result }
    }

    // MARK: Idempotency keys

    public func lookup(key: String, fingerprint: String, now: Date, expiry: TimeInterval) throws -> IdempotencyClaim? {
        try database.read { try ServerRecordsSQL.lookup(key: key, fingerprint: fingerprint, now: now, expiry: expiry, $0) }
    }

    public func complete(key: String, response: IdempotentResponse) throws {
        try database.write { try ServerRecordsSQL.complete(key: key, response: response, $0) }
    }

    // MARK: Secrets

    public func secret(named name: String, orStore candidate: [UInt8]) throws -> [UInt8] {
        try database.write { try ServerRecordsSQL.secret(named: name, orStore: candidate, $0) }
    }
}
