import Foundation

/// Remembers requests sent with an `Idempotency-Key`, so a retried create changes nothing
/// more and gets the first answer again.
///
/// A key moves through two states: `begin` claims it (committed at once, before the work),
/// `complete` stores the answer. A key claimed but never completed (the process died between
/// the two) stays "in progress" until it expires: a retry then gets a conflict instead of a
/// second copy of the work, which is the safe side.
public protocol IdempotencyStore: Sendable {
    /// Claims `key` for a request with `fingerprint`, or reports what is known about it.
    /// Keys older than `expiry` count as unknown (and are purged from time to time).
    func begin(key: String, fingerprint: String, now: Date, expiry: TimeInterval) throws -> IdempotencyClaim

    /// Stores the answer for a claimed key.
    func complete(key: String, response: IdempotentResponse) throws

    /// Gives up a claim whose request failed without changing anything, so it may be retried.
    func release(key: String) throws
}

public enum IdempotencyClaim: Sendable, Equatable {
    /// The key is new and now claimed: do the work, then `complete` it.
    case claimed
    /// The same request was answered before: send this again.
    case replay(IdempotentResponse)
    /// The key was used for a different request.
    case mismatch
    /// The key is claimed by a request that has not finished (or never did).
    case inProgress
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
