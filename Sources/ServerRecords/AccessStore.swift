import Foundation

/// The stored form of the write-protection token: never the token itself, only a salted slow
/// hash (PBKDF2-HMAC-SHA256) with its parameters.
public struct TokenHash: Sendable, Equatable {
    public static let pbkdf2SHA256 = "pbkdf2-sha256"

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

/// Where the token hash and the failed attempts are kept (server-side, surviving restarts).
public protocol AccessStore: Sendable {
    func tokenHash() throws -> TokenHash?
    /// Stores (or, with `nil`, removes) the token hash; any lockouts are cleared with it.
    func setTokenHash(_ hash: TokenHash?) throws
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
