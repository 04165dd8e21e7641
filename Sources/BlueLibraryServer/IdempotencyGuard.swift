import Essentials
import Foundation
import HTTPServer
import Library
import ServerRecords

/// `Idempotency-Key` for creating requests: a retry with the same key and body gets the first
/// response and changes nothing more (keys live 24 hours); the same key with a different body
/// is 422.
///
/// The key is claimed by the request's first write, in that write's transaction
/// (``IdempotencyKeyClaim``), so claim and change commit together or not at all: a request
/// that failed before its write committed (its own error, or the database going away, a
/// failover included) leaves the key free, and a retry runs once. Two requests with one key
/// at once: the second's write waits for the first's claim and is rolled back when it
/// commits; the second then gets the first's answer (or 409 while it is being stored). A key
/// whose write committed but whose answer was never stored (lost with the database between
/// the two) answers 409 until it expires: the change was made.
struct IdempotencyGuard: Sendable {
    let store: any IdempotencyStore
    let clock: @Sendable () -> Date
    var expiry: TimeInterval = 24 * 60 * 60

    static let replayedHeaders = ["Content-Type", "Location", "ETag"]

    /// - Parameter fingerprint: the request's ``Fingerprint`` when its body was streamed
    ///   (`request.body` is then empty).
    func run(_ request: HTTPRequest, fingerprint streamed: String? = nil, context: RequestContext,
             _ work: () throws -> HTTPResponse) throws -> HTTPResponse {
        guard let rawKey = request.headers["Idempotency-Key"] else { return try work() }
        let key = rawKey.trimmingASCIIWhitespace()
        guard !key.isEmpty, key.utf8.count <= 255, key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HTTPError(.badRequest, detail: "Idempotency-Key must be 1 to 255 visible ASCII characters, such as a UUID.")
        }
        let claim = IdempotencyKeyClaim(
            key: "\(request.method.rawValue) \(request.path) \(key)", fingerprint: streamed ?? Self.fingerprint(request), now: clock(),
            expiry: expiry)
        if let known = try lookUp(claim) { return try Self.answer(known) }
        var response: HTTPResponse?
        // Twice at most: a write that found the key taken by another request's claim is rolled
        // back and answered from the key, unless that claim was rolled back too (the other
        // request's change failed in the same transaction): then this one runs again.
        for attempt in 0..<2 where response == nil {
            do {
                response = try IdempotencyKeyClaim.$current.withValue(claim) { try work() }
            } catch let error where !claim.isCommitted {
                // Another request with this key committed first; this one's write was rolled back.
                if Self.isKeyTaken(error) {
                    if let known = try lookUp(claim) { return try Self.answer(known) }
                    if attempt == 0 { continue }
                    return try Self.answer(.inProgress)
                }
                if let dependency = DependencyUnavailable.cause(of: error) { throw Self.ambiguousWriteError(dependency) }
                throw error
            }
        }
        guard let response else { return try Self.answer(.inProgress) }
        if claim.isCommitted, case let .bytes(body) = response.body, response.status.code < 500 {
            let headers = Self.replayedHeaders.compactMap { name in response.headers[name].map { [name, $0] } }
            try? store.complete(key: claim.key, response: IdempotentResponse(status: response.status.code, headers: headers, body: body))
        }
        return response
    }

    /// Whether `error` (or the storage error it travels in) is ``IdempotencyKeyTaken``.
    static func isKeyTaken(_ error: any Error) -> Bool {
        switch error {
        case is IdempotencyKeyTaken: true
        case let LibraryError.storage(underlying): isKeyTaken(underlying.error)
        default: false
        }
    }

    /// What the store knows of `claim`'s key (nil: nothing, the request may run).
    private func lookUp(_ claim: IdempotencyKeyClaim) throws -> IdempotencyClaim? {
        do {
            return try store.lookup(key: claim.key, fingerprint: claim.fingerprint, now: claim.now, expiry: claim.expiry)
        } catch {
            throw LibraryError.storage(UnderlyingError(error))
        }
    }

    /// The answer for a key a committed write holds.
    private static func answer(_ known: IdempotencyClaim) throws -> HTTPResponse {
        switch known {
        case let .replay(stored):
            var response = HTTPResponse(status: HTTPStatus(code: stored.status), body: .bytes(stored.body))
            for pair in stored.headers where pair.count == 2 { response.headers.set(pair[0], pair[1]) }
            response.headers.set("Idempotent-Replayed", "true")
            return response
        case .mismatch:
            throw HTTPError(.unprocessableContent,
                            detail: "This Idempotency-Key was already used with a different request body; use a new key for a new request.",
                            type: "urn:bluelibrary:problem:idempotency-key-reused")
        case .inProgress:
            // With read replicas: the position of the primary's state the key was read in, so
            // a GET that looks for the change is not answered by a replica that lacks it.
            var headers: HTTPHeaders = ["Retry-After": "1"]
            if let position = ReadPosition.current?.handedBack, position > 0 {
                headers.set(ReadPositionMiddleware.header, ReadPosition.text(position))
            }
            throw HTTPError(.conflict,
                            detail: "The change sent with this Idempotency-Key was saved, and its answer is being recorded or was lost "
                                + "(the database went away just after the change was saved). Do not send it again with a new key: "
                                + "look at the result (GET); retry with this key in a moment to get the answer if it is being recorded.",
                            type: "urn:bluelibrary:problem:idempotency-key-in-progress",
                            headers: headers)
        }
    }

    /// The 503 for a write with an Idempotency-Key that lost the database midway: the change
    /// and the key's claim commit together, so a retry with the same key is safe.
    static func ambiguousWriteError(_ dependency: any UnavailableDependency) -> HTTPError {
        DependencyUnavailable.error(
            dependency,
            detail: "The database connection was lost while this change was being saved, so it may or may not have been "
                + "saved. Repeat the request with the same Idempotency-Key once the database is back: if the change was "
                + "not saved, it is made once; if it was, the repeat answers 409 idempotency-key-in-progress (or the first "
                + "answer), and nothing is saved twice.")
    }

    /// What makes two requests "the same": method, target and body.
    static func fingerprint(_ request: HTTPRequest) -> String {
        let head = Array("\(request.method.rawValue) \(request.target)\n".utf8)
        return String(ETag.strong(for: head + request.body).dropFirst().dropLast()) + "-" + String(request.body.count)
    }

    /// ``fingerprint(_:)`` of a body that arrives in pieces (the same value for the same body).
    struct Fingerprint {
        private var hash = FNV1a.offsetBasis
        private var count = 0

        init(_ request: HTTPRequest) {
            add(Array("\(request.method.rawValue) \(request.target)\n".utf8))
            count = 0
        }

        mutating func add(_ bytes: [UInt8]) {
            FNV1a.update(&hash, with: bytes)
            count += bytes.count
        }

        var value: String { FNV1a.hex(hash) + "-" + String(count) }
    }
}
