import Crypto
import Foundation
import HTTPServer
import Library
import ServerRecords
import Synchronization

/// The passcode lock's decisions: which requests need the token, whether a presented token
/// is right, and the per-address lockout. The token is never kept: the store has only its
/// PBKDF2 hash, and this guard only a fast keyed digest of the last token that verified
/// (so a correct token costs one slow hash per process, not per request).
///
/// Everything a decision needs is in memory: the stored token hash (loaded at start, re-read
/// by `reloadToken()` when the database changed) and the failure records (loaded at start;
/// every change is written through to the store by the thread that made it, which is never an
/// event loop). On a database shared by several instances (`shared`) the store's record is the
/// one that counts: a failure is added to it in one transaction (so failures spread over the
/// instances lock the address like failures at one), and `reloadFailures()` (run when the
/// database's access signal moves, within a second) brings every instance's lockouts into
/// memory. So the quick decisions (no token, a locked address, the token that verified
/// last) touch no database and wait on no lock held across I/O.
public final class AccessGuard: Sendable {
    public enum Decision: Equatable, Sendable {
        case allowed
        /// 401: no token, or a wrong one (`invalidToken`).
        case unauthorized(invalidToken: Bool)
        /// 429: locked out for this many more seconds (rounded up).
        case locked(retryAfter: Int)
        /// 503: too many token checks in progress; nothing was hashed or counted.
        case busy
    }

    /// Failure records kept at most (memory and database); the oldest go first.
    let maxFailureRecords: Int
    /// The slow checks' own pool.
    let hashing: TokenHashing
    /// Runs before each slow hash (tests hold checks there).
    let beforeHash: @Sendable () -> Void
    private let slowHashCount = Atomic<Int>(0)
    /// Slow hashes made so far.
    public var slowHashes: Int { slowHashCount.load(ordering: .relaxed) }
    private let persistCount = Atomic<Int>(0)

    let store: any AccessStore
    /// Other instances record failures in the same store (see the type's comment).
    let shared: Bool
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

    public init(store: any AccessStore, settings: SettingsService, clock: @escaping @Sendable () -> Date,
                maxFailureRecords: Int = 10_000, hashing: TokenHashing = TokenHashing(),
                beforeHash: @escaping @Sendable () -> Void = {}, shared: Bool = false) throws {
        self.store = store
        self.shared = shared
        self.settings = settings
        self.clock = clock
        self.maxFailureRecords = max(1, maxFailureRecords)
        self.hashing = hashing
        self.beforeHash = beforeHash
        cacheKey = try PasswordHash.randomBytes(32)
        try reloadToken()
        let stored = try store.allFailedAttempts()
        failures.withLock { $0 = stored }
        try prune()
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

    /// Replaces the failure records in memory with the stored ones, when other instances
    /// record failures too (`shared`; one process keeps memory and store equal by itself).
    public func reloadFailures() throws {
        guard shared else { return }
        let stored = try store.allFailedAttempts()
        failures.withLock { $0 = stored }
    }

    /// Whether a token is stored (from memory).
    public var hasToken: Bool { token.withLock { $0 != nil } }

    /// Paths that stay open even with `protectReads` (probes, the API description, and `/`,
    /// an index of links with no library data that sends browsers to the app). `/metrics` is
    /// not one: its counters describe the library's use (routes, covers, pages), so it follows
    /// `protectReads` like every other read (a scraper sends the token).
    static let alwaysOpen: Set<String> = ["/", "/healthz", "/readyz", "/openapi.yaml"]
    /// Mount points of static resources (``StaticResources``) that stay open with
    /// `protectReads`: the mount and everything under it. The web app holds no data; it asks
    /// for the token itself when the API answers 401. `/docs` is the API reference, as open as
    /// `/openapi.yaml`.
    static let alwaysOpenPrefixes: [String] = ["/app", "/docs"]

    /// Whether `path` is always open (reads only).
    static func isAlwaysOpen(_ path: String) -> Bool {
        alwaysOpen.contains(path) || alwaysOpenPrefixes.contains { path == $0 || path.hasPrefix($0 + "/") }
    }

    /// Whether `method` on `path` needs the token under `settings`.
    public static func requiresToken(method: HTTPMethod, path: String, settings: LibrarySettings) -> Bool {
        guard settings.access.passcodeEnabled else { return false }
        let isRead = method == .get || method == .head || method == .options
        if !isRead { return true }
        if path == "/settings" { return true }
        if isAlwaysOpen(path) { return false }
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
    ///
    /// A token that is not the cached one is counted as a failure *before* it is hashed (and
    /// the count taken back if it is right), so concurrent guesses from one address cannot
    /// get past the attempt limit, and a locked address gets its 429 without any hashing. The
    /// hash runs on `hashing`, checks from different addresses at once; no lock is held
    /// across it.
    public func check(authorization: String?, client: String) throws -> Decision {
        let now = clock()
        // Shared: a decision that is not quick (it runs on a worker and touches the store
        // anyway) starts from the stored record, so another instance's lockout counts at once.
        if shared, !isQuick(authorization: authorization, client: client) {
            let stored = try store.failedAttempts(client: client)
            failures.withLock { $0[client] = Self.merged(stored: stored, memory: $0[client]) }
        }
        if let locked = lockout(client: client, now: now) { return locked }
        guard let presented = Self.bearerToken(authorization) else { return .unauthorized(invalidToken: false) }
        let bytes = Array(presented.utf8)
        if cachedMatch(bytes) {
            try clearFailures(client: client, now: now)
            return lockout(client: client, now: now) ?? .allowed
        }
        let access = settings.current.access
        let interval = TimeInterval(access.checkIntervalSeconds)
        let reserved = failures.withLock { all -> FailedAttempts? in
            let previous = all[client]
            if previous?.lockRemaining(at: now) != nil { return nil }
            let next = FailedAttempts.afterFailure(previous, now: now, limit: access.attemptLimit, interval: interval)
            all[client] = next
            Self.evict(&all, keeping: maxFailureRecords, now: now, interval: interval)
            return next
        }
        guard reserved != nil else { return lockout(client: client, now: now) ?? .locked(retryAfter: 1) }
        let verdict = hashing.run { [self] in
            beforeHash()
            return (try? verify(bytes)) ?? false
        }
        switch verdict {
        case nil:
            // Refused before hashing: the attempt does not count.
            failures.withLock { all in
                guard var record = all[client] else { return }
                record.count -= 1
                if record.count <= 0 { all[client] = nil; return }
                if record.count < access.attemptLimit { record.lockedUntil = nil }
                all[client] = record
            }
            return .busy
        case true?:
            failures.withLock { _ = $0.removeValue(forKey: client) }
            if shared {
                try clearSharedFailures(client: client, now: now)
                return lockout(client: client, now: now) ?? .allowed
            }
            try persist(client: client)
            return .allowed
        case false?:
            if shared {
                try recordSharedFailure(client: client, now: now, limit: access.attemptLimit, interval: interval)
            } else {
                try persist(client: client)
            }
            return .unauthorized(invalidToken: true)
        }
    }

    /// The record a shared check goes on from: the stored one (another instance's failures
    /// count at once) unless this instance's own holds more, such as attempts reserved by
    /// checks still hashing here and not stored yet, which must not be erased (concurrent
    /// wrong guesses would then get past the limit). The later lock wins, then the larger count.
    static func merged(stored: FailedAttempts?, memory: FailedAttempts?) -> FailedAttempts? {
        guard let stored else { return memory }
        guard let memory else { return stored }
        switch (stored.lockedUntil, memory.lockedUntil) {
        case let (storedLock?, memoryLock?): return storedLock >= memoryLock ? stored : memory
        case (.some, nil): return stored
        case (nil, .some): return memory
        case (nil, nil):
            if stored.windowStart != memory.windowStart { return stored.windowStart > memory.windowStart ? stored : memory }
            return stored.count >= memory.count ? stored : memory
        }
    }

    /// Drops expired records (a window or lock that ended `interval` ago), then the oldest
    /// windows while more than `limit` are kept.
    static func evict(_ all: inout [String: FailedAttempts], keeping limit: Int, now: Date, interval: TimeInterval) {
        guard all.count > limit else { return }
        all = all.filter { !isExpired($0.value, now: now, interval: interval) }
        guard all.count > limit else { return }
        // Down to 90% of the limit, so this O(n log n) pass is not repeated for every failure.
        let keep = max(1, limit - limit / 10)
        let newest = all.sorted { $0.value.windowStart > $1.value.windowStart }.prefix(keep)
        all = Dictionary(uniqueKeysWithValues: newest.map { ($0.key, $0.value) })
    }

    static func isExpired(_ record: FailedAttempts, now: Date, interval: TimeInterval) -> Bool {
        if let lockedUntil = record.lockedUntil { return lockedUntil <= now }
        return now.timeIntervalSince(record.windowStart) >= interval
    }

    /// Prunes the stored records the same way (expired ones; beyond the cap, the oldest).
    func prune() throws {
        let interval = TimeInterval(settings.current.access.checkIntervalSeconds)
        let now = clock()
        failures.withLock { all in
            all = all.filter { !Self.isExpired($0.value, now: now, interval: interval) }
            Self.evict(&all, keeping: maxFailureRecords, now: now, interval: interval)
        }
        try persisting.withLock { _ in
            try store.pruneFailedAttempts(now: now, interval: interval, keeping: maxFailureRecords)
        }
    }

    private func lockout(client: String, now: Date) -> Decision? {
        guard let remaining = failures.withLock({ $0[client] })?.lockRemaining(at: now) else { return nil }
        return .locked(retryAfter: max(1, Int(remaining.rounded(.up))))
    }

    private func clearFailures(client: String, now: Date) throws {
        guard failures.withLock({ $0.removeValue(forKey: client) }) != nil else { return }
        if shared { return try clearSharedFailures(client: client, now: now) }
        try persist(client: client)
    }

    /// A right token clears the stored record, unless another instance locked the address
    /// meanwhile: that lock stays, in the store and in memory.
    private func clearSharedFailures(client: String, now: Date) throws {
        let kept = try persisting.withLock { _ in
            try store.updateFailedAttempts(client: client) { stored in
                stored?.lockRemaining(at: now) != nil ? stored : nil
            }
        }
        failures.withLock { $0[client] = kept }
    }

    /// Adds one failure to the stored record (whatever other instances added) and keeps the
    /// result in memory.
    private func recordSharedFailure(client: String, now: Date, limit: Int, interval: TimeInterval) throws {
        let merged = try persisting.withLock { _ in
            try store.updateFailedAttempts(client: client) { stored in
                FailedAttempts.afterFailure(stored, now: now, limit: limit, interval: interval)
            }
        }
        failures.withLock { $0[client] = Self.merged(stored: merged, memory: $0[client]) }
    }

    /// Writes the client's record as it is in memory now (the latest, whoever wins the lock);
    /// every 256th write also prunes the stored records.
    private func persist(client: String) throws {
        try persisting.withLock { _ in
            let record = failures.withLock { $0[client] }
            try store.updateFailedAttempts(client: client) { _ in record }
        }
        if persistCount.wrappingAdd(1, ordering: .relaxed).newValue % 256 == 0 { try prune() }
    }

    /// The keyed digest of `token` against the stored record, and the record (nil: no token stored):
    /// HMAC-SHA256 under the per-process `cacheKey` of the record followed by the token. Memory
    /// only (never stored), so it can change between builds without touching stored hashes.
    private func digest(_ presented: [UInt8]) -> (record: [UInt8], digest: [UInt8])? {
        guard let stored = token.withLock({ $0 }) else { return nil }
        let record = stored.salt + stored.hash
        guard let digest = try? HMACSHA256.tag(record + presented, key: cacheKey) else { return nil }
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
        slowHashCount.add(1, ordering: .relaxed)
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

    /// Whether the stored hash is one of `token` (a slow hash; for start-up).
    static func storedHash(in store: any AccessStore, verifies token: String) throws -> Bool {
        guard let stored = try store.tokenHash(), stored.algorithm == TokenHash.pbkdf2SHA256 else { return false }
        return PasswordHash.verify(token: Array(token.utf8), salt: stored.salt, hash: stored.hash, iterations: stored.iterations)
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

    func handle(_ request: HTTPRequest, context: RequestContext, next: any HTTPResponder) throws -> HTTPReply {
        // The common case, no lock configured, costs one atomic load.
        guard guardian.settings.passcodeEnabled, AccessGuard.requiresToken(method: request.method, path: String(request.path), settings: guardian.settings.current) else {
            return try next.respond(to: request, context: context)
        }
        // A token that is not the cached one costs a PBKDF2 hash (and a failure a write):
        // never on an event loop. The rest of the chain then runs on the worker too.
        let client = context.clientAddress
        guard guardian.isQuick(authorization: request.headers["Authorization"], client: client) else {
            return .blocking { [self] in
                if let refusal = decide(request, context, client: client) { return refusal }
                return try next.respond(to: request, context: context).resolve()
            }
        }
        if let refusal = decide(request, context, client: client) { return .response(refusal) }
        return try next.respond(to: request, context: context)
    }

    /// The response refusing the request (a 401/429/503, a 503 when the database is away, or a
    /// 500 when the check failed otherwise),
    /// or nil when it may proceed. Blocks unless `isQuick` said the decision is in memory.
    private func decide(_ request: HTTPRequest, _ context: RequestContext, client: String) -> HTTPResponse? {
        let decision: AccessGuard.Decision
        do {
            decision = try guardian.check(authorization: request.headers["Authorization"], client: client)
        } catch {
            logger.log(.error, "access check failed", [("error", .string(String(describing: error))), ("requestId", .string(context.requestID))])
            if let dependency = DependencyUnavailable.cause(of: error) { return DependencyUnavailable.error(dependency).response() }
            return HTTPError(.internalServerError, detail: "The server could not check the access token. Quote request id \(context.requestID) when reporting it.")
                .response()
        }
        return Self.refusal(for: decision)
    }

    /// The response refusing a request (nil: allowed).
    static func refusal(for decision: AccessGuard.Decision) -> HTTPResponse? {
        switch decision {
        case .allowed:
            return nil
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
        case .busy:
            return HTTPError(
                .serviceUnavailable,
                detail: "Too many token checks are in progress; try again in a second.",
                headers: ["Retry-After": "1"]
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

    /// The same decision taken from the request head, before any body byte is read (and
    /// before `100 Continue`): a request that will be refused gets its 401/429 from the head
    /// and the connection is closed. Decisions that need a hash run off the loop.
    /// `cors` (when configured) stamps the refusals, which skip the middleware chain, so that a
    /// page of an allowed origin can read its 401 or 429, and lets its preflights through.
    static func headCheck(guardian: AccessGuard, forwarded: ForwardedHeadersMiddleware, logger: JSONLogger,
                          cors: CORSMiddleware? = nil) -> HeadCheck {
        HeadCheck { request, context in
            // A preflight from an allowed origin never carries the token; the CORS middleware
            // answers it (any other OPTIONS is a read like GET).
            guard cors?.preflightOrigin(of: request) == nil,
                  guardian.settings.passcodeEnabled,
                  AccessGuard.requiresToken(method: request.method, path: String(request.path), settings: guardian.settings.current)
            else { return .proceed }
            let client = forwarded.clientAddress(request, context)
            let authorization = request.headers["Authorization"]
            let decide: @Sendable () -> HTTPResponse? = {
                do {
                    let refused = refusal(for: try guardian.check(authorization: authorization, client: client))
                    return refused.map { cors?.stamped($0, request: request) ?? $0 }
                } catch {
                    // Left to the middleware, which logs it and answers 500.
                    logger.log(.warning, "access check from the request head failed", [("error", .string(String(describing: error)))])
                    return nil
                }
            }
            guard guardian.isQuick(authorization: authorization, client: client) else { return .decideOnWorker(decide) }
            return decide().map { .refuse($0) } ?? .proceed
        }
    }
}
