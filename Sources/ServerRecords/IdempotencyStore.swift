import Foundation
import Synchronization

/// Remembers requests sent with an `Idempotency-Key`, so a retried create changes nothing
/// more and gets the first answer again.
///
/// A key is claimed inside the transaction of the request's first write
/// (``IdempotencyKeyClaim``): the claim commits with the write or not at all. So a request
/// whose write never committed (the database went away before or during its commit) leaves no
/// trace, and a retry with its key runs once; one whose write committed holds the key, and
/// ``complete(key:response:)`` then stores its answer. A key whose write committed but whose
/// answer was never stored (the database went away between the two, or the commit's reply
/// was lost) stays "in progress" until it expires: the change is there, and a retry is told so.
public protocol IdempotencyStore: Sendable {
    /// What is known about `key` for a request with `fingerprint`; nil when nothing is (no
    /// committed write holds it, or it is older than `expiry` and counts as unknown).
    func lookup(key: String, fingerprint: String, now: Date, expiry: TimeInterval) throws -> IdempotencyClaim?

    /// Stores the answer for a key that a committed write claimed.
    func complete(key: String, response: IdempotentResponse) throws
}

/// What a key held by a committed write says about a request with it.
public enum IdempotencyClaim: Sendable, Equatable {
    /// The same request was answered before: send this again.
    case replay(IdempotentResponse)
    /// The key was used for a different request.
    case mismatch
    /// The key's write committed; its answer is being stored, or was lost.
    case inProgress
}

/// An `Idempotency-Key` that the request's first committed write claims, in its own
/// transaction. The server binds it to ``current`` around the request's work; each store write
/// on that thread claims it (``pending``) until one commits (``markCommitted()``).
public final class IdempotencyKeyClaim: Sendable {
    @TaskLocal public static var current: IdempotencyKeyClaim?

    public let key: String
    public let fingerprint: String
    public let now: Date
    /// Seconds a key lives; an older one may be claimed again.
    public let expiry: TimeInterval
    private let committed = Atomic<Bool>(false)

    public init(key: String, fingerprint: String, now: Date, expiry: TimeInterval) {
        self.key = key
        self.fingerprint = fingerprint
        self.now = now
        self.expiry = expiry
    }

    /// The claim a write transaction starting on this thread must make; nil when there is
    /// none, or a write of this request already committed it.
    public static var pending: IdempotencyKeyClaim? {
        guard let current, !current.isCommitted else { return nil }
        return current
    }

    /// Whether a write of this request committed the claim.
    public var isCommitted: Bool { committed.load(ordering: .acquiring) }

    /// Called by the store once the transaction that made the claim committed.
    public func markCommitted() {
        committed.store(true, ordering: .releasing)
    }
}

/// Thrown by a write whose claim found the key held (another request with it committed
/// first): the write is rolled back, and the request is answered from what the key holds.
public struct IdempotencyKeyTaken: Error, Sendable, Equatable {
    public init() {}
}

/// The stored answer to a request: status, the headers worth repeating, and the body.
public struct IdempotentResponse: Sendable, Equatable, Codable {
    public var status: Int
    public var headers: [[String]]
    public var body: [UInt8]

    public init(status: Int, headers: [[String]], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}
