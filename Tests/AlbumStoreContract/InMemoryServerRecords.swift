import Essentials
import Foundation
import Library
import ServerRecords
import Synchronization

/// `IdempotencyStore` in a dictionary, for tests (never shipped in Sources). Keeps the SQL
/// stores' rules: a key is claimed by a committed write (``claim(_:)``, called by
/// `InMemoryAlbumStore` with each write), expired keys count as unknown.
public final class InMemoryIdempotencyStore: IdempotencyStore {
    private struct Entry {
        var fingerprint: String
        var createdAt: Date
        var response: IdempotentResponse?
    }

    private let entries = Mutex<[String: Entry]>([:])

    public init() {}

    /// Claims `claim`'s key; throws ``IdempotencyKeyTaken`` when it is live.
    public func claim(_ claim: IdempotencyKeyClaim) throws {
        let oldest = Self.oldest(claim.now, claim.expiry)
        try entries.withLock { entries in
            if let existing = entries[claim.key], Timestamp.milliseconds(existing.createdAt) >= oldest { throw IdempotencyKeyTaken() }
            entries[claim.key] = Entry(fingerprint: claim.fingerprint, createdAt: claim.now)
        }
    }

    public func lookup(key: String, fingerprint: String, now: Date, expiry: TimeInterval) throws -> IdempotencyClaim? {
        let oldest = Self.oldest(now, expiry)
        return entries.withLock { entries in
            guard let existing = entries[key], Timestamp.milliseconds(existing.createdAt) >= oldest else { return nil }
            guard existing.fingerprint == fingerprint else { return .mismatch }
            guard let response = existing.response else { return .inProgress }
            return .replay(response)
        }
    }

    public func complete(key: String, response: IdempotentResponse) throws {
        entries.withLock { $0[key]?.response = response }
    }

    /// Milliseconds, as stored: a key exactly `expiry` old is still known.
    private static func oldest(_ now: Date, _ expiry: TimeInterval) -> Int64 {
        Timestamp.milliseconds(now) - Int64(expiry * 1000)
    }
}

/// A settings store in memory (counts saves).
public final class InMemorySettingsStore: SettingsStore {
    private let stored: Mutex<[UInt8]?>
    private let saveCount = Mutex(0)

    public init(_ json: String? = nil) { stored = Mutex(json.map { Array($0.utf8) }) }

    public var saves: Int { saveCount.withLock { $0 } }
    public var text: String? { stored.withLock { $0.map { String(decoding: $0, as: UTF8.self) } } }

    public func loadSettings() throws -> [UInt8]? { stored.withLock { $0 } }

    public func saveSettings(_ json: [UInt8]) throws {
        stored.withLock { $0 = json }
        saveCount.withLock { $0 += 1 }
    }
}

/// `AccessStore` in memory, for tests (never shipped in Sources), with the SQLite store's rules:
/// times kept in whole milliseconds, a new token hash clears every failure record.
public final class InMemoryAccessStore: AccessStore {
    private struct State {
        var keys: [String: AccessKey] = [:]
        var failures: [String: FailedAttempts] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    public func accessKeys() throws -> [AccessKey] { state.withLock { $0.keys.values.sorted { $0.id < $1.id } } }

    public func saveAccessKey(_ key: AccessKey) throws {
        state.withLock { Self.save(key, in: &$0) }
    }

    private static func save(_ key: AccessKey, in state: inout State) {
        var stored = key
        stored.createdAt = Timestamp.date(milliseconds: Timestamp.milliseconds(key.createdAt))
        stored.expiresAt = key.expiresAt.map { Timestamp.date(milliseconds: Timestamp.milliseconds($0)) }
        if key.id == AccessKey.tokenID, state.keys[key.id]?.secret != key.secret { state.failures = [:] }
        state.keys[key.id] = stored
    }

    public func changeAccessKeys<T>(_ body: ([AccessKey]) throws -> (change: AccessKeyChange, result: T)) throws -> T {
        try state.withLock { state in
            let (change, result) = try body(state.keys.values.sorted { $0.id < $1.id })
            switch change {
            case .none: break
            case let .save(key): Self.save(key, in: &state)
            case let .delete(id):
                if state.keys.removeValue(forKey: id) != nil, id == AccessKey.tokenID { state.failures = [:] }
            }
            return result
        }
    }

    @discardableResult
    public func deleteAccessKey(id: String) throws -> Bool {
        state.withLock { state in
            guard state.keys.removeValue(forKey: id) != nil else { return false }
            if id == AccessKey.tokenID { state.failures = [:] }
            return true
        }
    }

    public func failedAttempts(client: String) throws -> FailedAttempts? { state.withLock { $0.failures[client] } }

    public func allFailedAttempts() throws -> [String: FailedAttempts] { state.withLock { $0.failures } }

    @discardableResult
    public func updateFailedAttempts(client: String, _ body: (FailedAttempts?) -> FailedAttempts?) throws -> FailedAttempts? {
        state.withLock { state in
            let new = body(state.failures[client]).map(Self.stored)
            state.failures[client] = new
            return new
        }
    }

    public func pruneFailedAttempts(now: Date, interval: TimeInterval, keeping: Int) throws {
        let now = Timestamp.milliseconds(now)
        let interval = Int64(max(0, min(interval, 1e12)) * 1000)
        state.withLock { state in
            state.failures = state.failures.filter { _, record in
                if let lockedUntil = record.lockedUntil { return Timestamp.milliseconds(lockedUntil) > now }
                return Timestamp.milliseconds(record.windowStart) > now - interval
            }
            let newestFirst = state.failures.sorted { $0.value.windowStart > $1.value.windowStart }
            for (client, _) in newestFirst.dropFirst(max(0, keeping)) { state.failures[client] = nil }
        }
    }

    /// The record as a store keeps it: dates in whole milliseconds.
    private static func stored(_ record: FailedAttempts) -> FailedAttempts {
        FailedAttempts(
            count: record.count, windowStart: Timestamp.date(milliseconds: Timestamp.milliseconds(record.windowStart)),
            lockedUntil: record.lockedUntil.map { Timestamp.date(milliseconds: Timestamp.milliseconds($0)) })
    }
}

/// Every server record in memory (the three stores above and the secrets), as one value: what
/// an app on the in-memory store keeps beside its albums.
public final class InMemoryServerRecords: AccessStore, IdempotencyStore, SecretStore, SettingsStore {
    public let access = InMemoryAccessStore()
    public let idempotency = InMemoryIdempotencyStore()
    public let settings = InMemorySettingsStore()
    private let secrets = Mutex<[String: [UInt8]]>([:])

    public init() {}

    public func accessKeys() throws -> [AccessKey] { try access.accessKeys() }
    public func saveAccessKey(_ key: AccessKey) throws { try access.saveAccessKey(key) }
    @discardableResult
    public func deleteAccessKey(id: String) throws -> Bool { try access.deleteAccessKey(id: id) }
    public func changeAccessKeys<T>(_ body: ([AccessKey]) throws -> (change: AccessKeyChange, result: T)) throws -> T {
        try access.changeAccessKeys(body)
    }
    public func failedAttempts(client: String) throws -> FailedAttempts? { try access.failedAttempts(client: client) }
    public func allFailedAttempts() throws -> [String: FailedAttempts] { try access.allFailedAttempts() }
    @discardableResult
    public func updateFailedAttempts(client: String, _ body: (FailedAttempts?) -> FailedAttempts?) throws -> FailedAttempts? {
        try access.updateFailedAttempts(client: client, body)
    }
    public func pruneFailedAttempts(now: Date, interval: TimeInterval, keeping: Int) throws {
        try access.pruneFailedAttempts(now: now, interval: interval, keeping: keeping)
    }

    public func lookup(key: String, fingerprint: String, now: Date, expiry: TimeInterval) throws -> IdempotencyClaim? {
        try idempotency.lookup(key: key, fingerprint: fingerprint, now: now, expiry: expiry)
    }
    public func complete(key: String, response: IdempotentResponse) throws { try idempotency.complete(key: key, response: response) }

    public func loadSettings() throws -> [UInt8]? { try settings.loadSettings() }
    public func saveSettings(_ json: [UInt8]) throws { try settings.saveSettings(json) }
    public func updateSettings(_ body: ([UInt8]?) throws -> [UInt8]?) throws { try settings.updateSettings(body) }

    /// The first candidate stored under a name stays (as in the database stores).
    public func secret(named name: String, orStore candidate: [UInt8]) throws -> [UInt8] {
        secrets.withLock { secrets in
            if let stored = secrets[name] { return stored }
            secrets[name] = candidate
            return candidate
        }
    }
}
