import Crypto
import Foundation
import HTTPServer
import Library
import Synchronization

/// The passcode lock's decisions: which requests need the token, whether a presented token
/// is right, and the per-address lockout. The token is never kept: the store has only its
/// PBKDF2 hash, and this guard only a fast keyed digest of the last token that verified
/// (so a correct token costs one slow hash per process, not per request).
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
    /// (hash of the stored record, keyed digest of the token that verified against it).
    private let verified = Mutex<(record: [UInt8], digest: [UInt8])?>(nil)
    /// Serialises slow checks (wrong or not yet verified tokens).
    private let slowPath = Mutex<Void>(())

    public init(store: any AccessStore, settings: SettingsService, clock: @escaping @Sendable () -> Date) throws {
        self.store = store
        self.settings = settings
        self.clock = clock
        cacheKey = try PasswordHash.randomBytes(32)
    }

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

    /// Whether the request can be decided without slow work: no token at all, or the token
    /// that verified last (a cheap keyed digest). Anything else needs a PBKDF2 hash and
    /// perhaps a database write, which must not run on an event loop.
    public func isQuick(authorization: String?) -> Bool {
        guard let token = Self.bearerToken(authorization) else { return true }
        return (try? cachedMatch(Array(token.utf8))) == true
    }

    /// Checks the `Authorization` header value of a request from `client`.
    ///
    /// Wrong tokens are checked one at a time (under `slowPath`), with the lockout re-read
    /// inside: concurrent guesses from one address cannot get past the attempt limit.
    public func check(authorization: String?, client: String) throws -> Decision {
        let now = clock()
        if let locked = try lockout(client: client, now: now) { return locked }
        guard let token = Self.bearerToken(authorization) else { return .unauthorized(invalidToken: false) }
        if try cachedMatch(Array(token.utf8)) {
            if try store.failedAttempts(client: client) != nil {
                try store.updateFailedAttempts(client: client) { _ in nil }
            }
            return .allowed
        }
        return try slowPath.withLock { _ in try checkSlowly(token, client: client, now: clock()) }
    }

    private func lockout(client: String, now: Date) throws -> Decision? {
        guard let record = try store.failedAttempts(client: client), let remaining = record.lockRemaining(at: now) else {
            return nil
        }
        return .locked(retryAfter: max(1, Int(remaining.rounded(.up))))
    }

    private func checkSlowly(_ token: String, client: String, now: Date) throws -> Decision {
        let access = settings.current.access
        if let locked = try lockout(client: client, now: now) { return locked }
        if try verify(Array(token.utf8)) {
            if try store.failedAttempts(client: client) != nil {
                try store.updateFailedAttempts(client: client) { _ in nil }
            }
            return .allowed
        }
        let interval = TimeInterval(access.checkIntervalSeconds)
        try store.updateFailedAttempts(client: client) { previous in
            FailedAttempts.afterFailure(previous, now: now, limit: access.attemptLimit, interval: interval)
        }
        return .unauthorized(invalidToken: true)
    }

    /// Whether `token` is the one that verified last against the stored hash (cheap).
    private func cachedMatch(_ token: [UInt8]) throws -> Bool {
        guard let stored = try store.tokenHash(), stored.algorithm == TokenHash.pbkdf2SHA256 else { return false }
        let record = stored.salt + stored.hash
        let digest = try PasswordHash.pbkdf2SHA256(password: token, salt: cacheKey + record, iterations: 1)
        guard let cached = verified.withLock({ $0 }) else { return false }
        return PasswordHash.constantTimeEquals(cached.record, record) && PasswordHash.constantTimeEquals(cached.digest, digest)
    }

    /// Whether `token` matches the stored hash (false when none is stored).
    func verify(_ token: [UInt8]) throws -> Bool {
        if try cachedMatch(token) { return true }
        guard let stored = try store.tokenHash(), stored.algorithm == TokenHash.pbkdf2SHA256 else { return false }
        let record = stored.salt + stored.hash
        let digest = try PasswordHash.pbkdf2SHA256(password: token, salt: cacheKey + record, iterations: 1)
        guard PasswordHash.verify(token: token, salt: stored.salt, hash: stored.hash, iterations: stored.iterations) else {
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
        guard context.isOnWorkerPool || guardian.isQuick(authorization: request.headers["Authorization"]) else {
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
