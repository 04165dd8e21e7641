import Foundation
import Library
import ServerRecords
import Synchronization

/// `IdempotencyStore` in a dictionary, for tests (never shipped in Sources). Keeps the SQLite
/// store's rules: a claim is committed at once, expired keys count as unknown.
public final class InMemoryIdempotencyStore: IdempotencyStore {
    private struct Entry {
        var fingerprint: String
        var createdAt: Date
        var response: IdempotentResponse?
    }

    private let entries = Mutex<[String: Entry]>([:])

    public init() {}

    public func begin(key: String, fingerprint: String, now: Date, expiry: TimeInterval) throws -> IdempotencyClaim {
        // Milliseconds, as stored: a key exactly `expiry` old is still known.
        let oldest = Timestamp.milliseconds(now) - Int64(expiry * 1000)
        return entries.withLock { entries in
            entries = entries.filter { Timestamp.milliseconds($0.value.createdAt) >= oldest }
            guard let existing = entries[key] else {
                entries[key] = Entry(fingerprint: fingerprint, createdAt: now)
                return .claimed
            }
            guard existing.fingerprint == fingerprint else { return .mismatch }
            guard let response = existing.response else { return .inProgress }
            return .replay(response)
        }
    }

    public func complete(key: String, response: IdempotentResponse) throws {
        entries.withLock { $0[key]?.response = response }
    }

    public func release(key: String) throws {
        entries.withLock { entries in
            if entries[key]?.response == nil { entries[key] = nil }
        }
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
