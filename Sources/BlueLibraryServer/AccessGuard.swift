import Crypto
import Foundation
import HTTPServer
import Library
import Synchronization

/// The passcode lock's decisions: which requests need the token, whether a presented token
/// is right, and the per-address lockout. The token is never kept: the store has only its
/// PBKDF2 hash, and this guard only a fast keyed digest of the last token that verified
/// (so a correct token costs one slow hash per process, not per request).
///
/// Everything a decision needs is in memory: the stored token hash (loaded at start, re-read
/// by `reloadToken()` when the database changed) and the failure records (loaded at start;
/// every change is written through to the store by the thread that made it, which is never an
/// event loop). So the quick decisions (no token, a locked address, the token that verified
/// last) touch no database and wait on no lock held across I/O.
public final class AccessGuard: Sendable {
    public enum Decision: Equatable, Sendable {
        case allowed
        /// 401: no token, or a wrong one (`invalidToken`).
        case unauthorized(invalidToken: Bool)
        /// 429: locked out for this many more seconds (rounded up).
        case locked(retryAfter: Int)
    }

    let store: any AccessStore
    let settings: SettingsService
    let clock: @Sendable () -> Date
    /// A per-process random key for the verified-token cache.
    private let cacheKey: [UInt8]
    /// The stored token hash (nil: none, or one of an algorithm this build cannot check).
    private let token = Mutex<TokenHash?>(nil)
    /// (hash of the stored record, keyed digest of the token that verified against it).
    private let verified = Mutex<(record: [UInt8], digest: [UInt8])?>(nil)
    /// The failure records by client address (the store has a copy for restarts).
    private let failures = Mutex<[String: FailedAttempts]>([:])
    /// Orders the write-through of failure records (held across that write only, by worker
    /// threads; never by a decision).
    private let persisting = Mutex<Void>(())
    /// Serialises slow checks (wrong or not yet verified tokens).
    private let slowPath = Mutex<Void>(())

    public init(store: any AccessStore, settings: SettingsService, clock: @escaping @Sendable () -> Date) throws {
        self.store = store
        self.settings = settings
        self.clock = clock
        cacheKey = try PasswordHash.randomBytes(32)
        try reloadToken()
        let stored = try store.allFailedAttempts()
        failures.withLock { $0 = stored }
    }

    /// Re-reads the stored token hash (at start, after `bluelibrary token set`). A new hash
    /// clears the failure records, as storing it cleared them in the database.
    public func reloadToken() throws {
        let stored = try store.tokenHash().flatMap { $0.algorithm == TokenHash.pbkdf2SHA256 ? $0 : nil }
        let changed = token.withLock { current -> Bool in
            defer { current = stored }
            return current != stored
        }
        if changed {
            failures.withLock { $0.removeAll() }
        }
    }

    /// Whether a token is stored (from memory).
    public var hasToken: Bool { token.withLock { $0 != nil } }

    /// Paths that stay open even with `protectReads` (probes and the API description).
    static let alwaysOpen: Set<String> = ["/healthz", "/readyz", "/openapi.yaml", "/metrics"]

    /// Whether `method` on `path` needs the token under `settings`.
    public static func requiresToken(method: HTTPMethod, path: String, settings: LibrarySettings) -> Bool {
        guard settings.access.passcodeEnabled else { return false }
        let isRead = method == .get || method == .head || method == .options
        if !isRead { return true }
        if path == "/settings" { return true }
        if alwaysOpen.contains(path) { return false }
        return settings.access.protectReads
    }

    /// Whether the request can be decided from memory alone: a locked address, no token, or
    /// the token that verified last from an address with no failures to clear. Anything else
    /// needs a PBKDF2 hash or a write, which must not run on an event loop.
    public func isQuick(authorization: String?, client: String) -> Bool {
        let now = clock()
        let record = failures.withLock { $0[client] }
        if record?.lockRemaining(at: now) != nil { return true }
        guard let presented = Self.bearerToken(authorization) else { return true }
        return record == nil && cachedMatch(Array(presented.utf8))
    }

    /// Checks the `Authorization` header value of a request from `client`.
    public func check(authorization: String?, client: String) throws -> Decision {
        let now = clock()
        if let locked = lockout(client: client, now: now) { return locked }
        guard let presented = Self.bearerToken(authorization) else { return .unauthorized(invalidToken: false) }
        let bytes = Array(presented.utf8)
        if cachedMatch(bytes) {
            try clearFailures(client: client)
            return .allowed
        }
        // Wrong or not yet verified tokens are checked one at a time, the lockout re-read inside.
        return try slowPath.withLock { _ in
            if let locked = lockout(client: client, now: clock()) { return locked }
            if try verify(bytes) {
                try clearFailures(client: client)
                return .allowed
            }
            let access = settings.current.access
            let interval = TimeInterval(access.checkIntervalSeconds)
            failures.withLock { all in
                all[client] = FailedAttempts.afterFailure(all[client], now: clock(), limit: access.attemptLimit, interval: interval)
            }
            try persist(client: client)
            return .unauthorized(invalidToken: true)
        }
    }

    private func lockout(client: String, now: Date) -> Decision? {
        guard let remaining = failures.withLock({ $0[client] })?.lockRemaining(at: now) else { return nil }
        return .locked(retryAfter: max(1, Int(remaining.rounded(.up))))
    }

    private func clearFailures(client: String) throws {
        guard failures.withLock({ $0.removeValue(forKey: client) }) != nil else { return }
        try persist(client: client)
    }

    /// Writes the client's record as it is in memory now (the latest, whoever wins the lock).
    private func persist(client: String) throws {
        try persisting.withLock { _ in
            let record = failures.withLock { $0[client] }
            try store.updateFailedAttempts(client: client) { _ in record }
        }
    }

    /// The keyed digest of `token` against the stored record, and the record (nil: no token stored).
    private func digest(_ presented: [UInt8]) -> (record: [UInt8], digest: [UInt8])? {
        guard let stored = token.withLock({ $0 }) else { return nil }
        let record = stored.salt + stored.hash
        guard let digest = try? PasswordHash.pbkdf2SHA256(password: presented, salt: cacheKey + record, iterations: 1) else { return nil }
        return (record, digest)
    }

    /// Whether `token` is the one that verified last against the stored hash (cheap, memory only).
    private func cachedMatch(_ presented: [UInt8]) -> Bool {
        guard let (record, digest) = digest(presented), let cached = verified.withLock({ $0 }) else { return false }
        return PasswordHash.constantTimeEquals(cached.record, record) && PasswordHash.constantTimeEquals(cached.digest, digest)
    }

    /// Whether `token` matches the stored hash (false when none is stored): a slow hash.
    func verify(_ presented: [UInt8]) throws -> Bool {
        if cachedMatch(presented) { return true }
        guard let stored = token.withLock({ $0 }), let (record, digest) = digest(presented) else { return false }
        guard PasswordHash.verify(token: presented, salt: stored.salt, hash: stored.hash, iterations: stored.iterations) else {
            return false
        }
        verified.withLock { $0 = (record, digest) }
        return true
    }

    /// The token of `Bearer <token>` (scheme case-insensitive), or nil.
    static func bearerToken(_ header: String?) -> String? {
        guard let header else { return nil }
        let trimmed = header.trimmingASCIIWhitespace()
        guard trimmed.utf8.count > 7, trimmed.prefix(7).lowercased() == "bearer " else { return nil }
        let token = String(trimmed.dropFirst(7)).trimmingASCIIWhitespace()
        return token.isEmpty ? nil : token
    }

    /// Hashes and stores `token` (replacing any earlier one; lockouts are cleared).
    public static func storeToken(_ token: String, in store: any AccessStore, iterations: Int = PasswordHash.defaultIterations) throws {
        let made = try PasswordHash.make(token: Array(token.utf8), iterations: iterations)
        try store.setTokenHash(TokenHash(salt: made.salt, hash: made.hash, iterations: made.iterations))
    }
}

/// The passcode lock as a decorator around every route: 401 with `WWW-Authenticate: Bearer`
/// for a missing or wrong token, 429 with `Retry-After` while the client address is locked
/// out. It never logs or echoes the token.
struct AuthMiddleware: HTTPMiddleware {
    let guardian: AccessGuard
    let logger: JSONLogger

    func handle(_ request: HTTPRequest, context: RequestContext, next: any HTTPResponder) throws -> HTTPResponse {
        // The common case, no lock configured, costs one atomic load.
        guard guardian.settings.passcodeEnabled, AccessGuard.requiresToken(method: request.method, path: String(request.path), settings: guardian.settings.current) else {
            return try next.respond(to: request, context: context)
        }
        // A token that is not the cached one costs a PBKDF2 hash: never on an event loop.
        guard context.isOnWorkerPool || guardian.isQuick(authorization: request.headers["Authorization"], client: context.clientAddress) else {
            throw WorkerPoolRequired()
        }
        let decision: AccessGuard.Decision
        do {
            decision = try guardian.check(authorization: request.headers["Authorization"], client: context.clientAddress)
        } catch {
            logger.log(.error, "access check failed", [("error", .string(String(describing: error))), ("requestId", .string(context.requestID))])
            return HTTPError(.internalServerError, detail: "The server could not check the access token. Quote request id \(context.requestID) when reporting it.")
                .response()
        }
        switch decision {
        case .allowed:
            return try next.respond(to: request, context: context)
        case let .unauthorized(invalidToken):
            let challenge = invalidToken ? #"Bearer realm="bluelibrary", error="invalid_token""# : #"Bearer realm="bluelibrary""#
            return HTTPError(
                .unauthorized,
                detail: invalidToken
                    ? "The bearer token is not right. Repeated failures lock this address out for a while."
                    : "This server is write-protected: send Authorization: Bearer <token>.",
                type: "urn:bluelibrary:problem:unauthorized", title: "Token required",
                headers: ["WWW-Authenticate": challenge]
            ).response()
        case let .locked(retryAfter):
            return HTTPError(
                .tooManyRequests,
                detail: "Too many wrong tokens from this address; try again in \(retryAfter) seconds.",
                type: "urn:bluelibrary:problem:locked-out", title: "Locked out",
                headers: ["Retry-After": String(retryAfter)]
            ).response()
        }
    }
}
