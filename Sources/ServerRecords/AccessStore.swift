import Foundation

/// The stored form of a key's secret: never the secret itself. A passcode chosen by a person
/// gets a salted slow hash (PBKDF2-HMAC-SHA256, `iterations` rounds); a key the server made
/// from 256 random bits gets SHA-256 (no salt, one round: nothing finds a 256-bit secret
/// faster than trying half of them, and the check stays cheap enough for every request).
public struct TokenHash: Sendable, Equatable {
    public static let pbkdf2SHA256 = "pbkdf2-sha256"
    public static let sha256 = "sha256"

    public var algorithm: String
    public var salt: [UInt8]
    public var hash: [UInt8]
    public var iterations: Int

    public init(algorithm: String = TokenHash.pbkdf2SHA256, salt: [UInt8], hash: [UInt8], iterations: Int) {
        self.algorithm = algorithm
        self.salt = salt
        self.hash = hash
        self.iterations = iterations
    }
}

/// Failed token attempts from one client address (the seed's `attemptCount` and
/// `nextCheckDate`): failures are counted in a window of `checkInterval` that starts at the
/// first failure; reaching the limit locks the address until `lockedUntil`.
public struct FailedAttempts: Sendable, Equatable {
    public var count: Int
    public var windowStart: Date
    /// While `now < lockedUntil` the address gets 429 without its token being checked.
    public var lockedUntil: Date?

    public init(count: Int, windowStart: Date, lockedUntil: Date? = nil) {
        self.count = count
        self.windowStart = windowStart
        self.lockedUntil = lockedUntil
    }

    /// Whether the address is locked at `now`, and for how long.
    public func lockRemaining(at now: Date) -> TimeInterval? {
        guard let lockedUntil, now < lockedUntil else { return nil }
        return lockedUntil.timeIntervalSince(now)
    }

    /// The record after one more failure at `now`.
    public static func afterFailure(_ previous: FailedAttempts?, now: Date, limit: Int, interval: TimeInterval) -> FailedAttempts {
        var record: FailedAttempts
        if let previous, previous.lockedUntil.map({ now < $0 }) ?? false {
            return previous // still locked: a failure while locked does not extend the lock
        } else if let previous, previous.lockedUntil == nil, now.timeIntervalSince(previous.windowStart) < interval {
            record = previous
            record.count += 1
        } else {
            record = FailedAttempts(count: 1, windowStart: now)
        }
        if record.count >= limit {
            record.lockedUntil = now.addingTimeInterval(interval)
        }
        return record
    }
}

/// Where the API keys and the failed attempts are kept (server-side, surviving restarts).
public protocol AccessStore: Sendable {
    /// Every key, in id order.
    func accessKeys() throws -> [AccessKey]
    /// Stores `key`, replacing the one with its id. Storing ``AccessKey/tokenID`` (the
    /// passcode of earlier versions) clears every lockout, as setting the token always did.
    func saveAccessKey(_ key: AccessKey) throws
    /// Removes the key `id`; false when there was none.
    @discardableResult
    func deleteAccessKey(id: String) throws -> Bool
    /// Reads every key and makes the change `body` decides on them, in one transaction that
    /// every other change of keys waits for (on PostgreSQL, on every instance): the way to keep
    /// a rule over all the keys while one changes (an admin key is left; an id is new).
    /// Returns `body`'s result; what `body` throws leaves the keys as they were.
    func changeAccessKeys<T>(_ body: ([AccessKey]) throws -> (change: AccessKeyChange, result: T)) throws -> T
    func failedAttempts(client: String) throws -> FailedAttempts?
    /// Every stored record (loaded once at start; the guard keeps them in memory).
    func allFailedAttempts() throws -> [String: FailedAttempts]
    /// Reads, transforms and writes one client's record in one transaction (`nil` deletes).
    @discardableResult
    func updateFailedAttempts(client: String, _ body: (FailedAttempts?) -> FailedAttempts?) throws -> FailedAttempts?
    /// Deletes records whose window (unlocked) or lock ended by `now` (a window lasts
    /// `interval`), then the oldest windows beyond `keeping` records.
    func pruneFailedAttempts(now: Date, interval: TimeInterval, keeping: Int) throws
}

/// What ``AccessStore/changeAccessKeys(_:)`` writes.
public enum AccessKeyChange: Sendable, Equatable {
    case none
    /// Stores the key, replacing the one with its id.
    case save(AccessKey)
    case delete(id: String)
}

extension AccessStore {
    /// The hash of the passcode of earlier versions (the key ``AccessKey/tokenID``), if set.
    public func tokenHash() throws -> TokenHash? {
        try accessKeys().first { $0.id == AccessKey.tokenID }?.secret
    }

    /// Stores (or, with nil, removes) the passcode's hash as the admin key ``AccessKey/tokenID``
    /// (`bluelibrary token set`, `BLUELIBRARY_TOKEN`); every lockout is cleared with it.
    public func setTokenHash(_ hash: TokenHash?, now: Date = Date()) throws {
        guard let hash else {
            try deleteAccessKey(id: AccessKey.tokenID)
            return
        }
        let kept = try accessKeys().first { $0.id == AccessKey.tokenID }
        try saveAccessKey(AccessKey(
            id: AccessKey.tokenID, name: kept?.name ?? "token", scopes: [.admin], createdAt: kept?.createdAt ?? now, secret: hash))
    }
}
