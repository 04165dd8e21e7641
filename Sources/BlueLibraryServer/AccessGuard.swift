import Crypto
import Foundation
import HTTPServer
import Library
import ServerRecords
import Synchronization

/// The lock's decisions: whether a presented key is right, who it is (``AccessKey``), and the
/// lockouts per address and per key. Secrets are never kept: the store has their hashes. A key
/// the server made (``KeySecret``) is checked with one SHA-256, on the event loop; the passcode
/// of earlier versions (the key `token`) with PBKDF2, of which this guard keeps only a fast
/// keyed digest of the last one that verified (one slow hash per process, not per request).
/// What each route needs is ``AccessPolicy``'s.
///
/// Lockouts: a wrong or unknown key counts against the client address, and a known key id with
/// a wrong secret also against that key (record `key:<id>`), wherever it comes from. A locked
/// address gets 429 for unknown keys and for the passcode (even the right one: a person's
/// passcode could otherwise be guessed at full speed), but a right server-made key still works
/// from it: nobody finds a 256-bit secret by guessing, so a client behind a shared address
/// (a NAT) cannot lock the others out. A locked key refuses wrong secrets at once (429) from any
/// address while its right secret still works, so a guesser cannot lock out its holder.
///
/// Everything a decision needs is in memory: the keys (loaded at start, re-read by
/// `reloadKeys()` when the database changed) and the failure records (loaded at start;
/// every change is written through to the store by the thread that made it, which is never an
/// event loop). On a database shared by several instances (`shared`) the store's record is the
/// one that counts: a failure is added to it in one transaction (so failures spread over the
/// instances lock the address like failures at one), and `reloadFailures()` (run when the
/// database's access signal moves, within a second) brings every instance's lockouts into
/// memory. So the quick decisions (no token, a locked address, the token that verified
/// last) touch no database and wait on no lock held across I/O.
public final class AccessGuard: Sendable {
    public enum Decision: Equatable, Sendable {
        /// The key presented is right (and not expired).
        case allowed(AccessKey)
        /// 401: no token, or a wrong one (`invalidToken`), or an expired key (`expired`).
        case unauthorized(invalidToken: Bool, expired: Bool = false)
        /// 429: the address is locked out for this many more seconds (rounded up).
        case locked(retryAfter: Int)
        /// 429: the key is locked for wrong secrets for this many more seconds (its right
        /// secret still works).
        case keyLocked(retryAfter: Int)
        /// 429: a right key from a locked address past its allowance (``lockedRate``).
        case throttled(retryAfter: Int)
        /// 503: too many token checks in progress; nothing was hashed or counted.
        case busy

        public var isAllowed: Bool {
            if case .allowed = self { return true }
            return false
        }
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
    /// What decisions read: the stored keys by id (`token`, the passcode, only with a hash this
    /// build can check), and by id the text of each server-made key that verified, with its key:
    /// a key sent again costs a lookup of its public id and a constant-time comparison of the
    /// text, not a SHA-256. Emptied whenever the keys are re-read; at most one text per key (only
    /// a right one gets in, so a guesser adds nothing).
    private struct KeyTable {
        var byID: [String: AccessKey] = [:]
        var remembered: [String: (text: [UInt8], key: AccessKey)] = [:]
    }

    private let keys = Mutex(KeyTable())
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
        try reloadKeys()
        let stored = try store.allFailedAttempts()
        failures.withLock { $0 = stored }
        try prune()
    }

    /// Re-reads the stored keys (at start, after a change through any instance or
    /// `bluelibrary token set`). A new passcode hash clears the failure records, as storing it
    /// cleared them in the database.
    public func reloadKeys() throws {
        // One reload at a time: an older read landing after a newer one would bring back a key
        // revoked in between.
        try reloading.withLock { _ in try reloadKeysLocked() }
    }

    private let reloading = Mutex<Void>(())

    private func reloadKeysLocked() throws {
        var stored: [String: AccessKey] = [:]
        for key in try store.accessKeys() {
            if key.id == AccessKey.tokenID && key.secret.algorithm != TokenHash.pbkdf2SHA256 { continue }
            stored[key.id] = key
        }
        let tokenChanged = keys.withLock { table -> Bool in
            defer { table = KeyTable(byID: stored) }
            return table.byID[AccessKey.tokenID]?.secret != stored[AccessKey.tokenID]?.secret
        }
        if tokenChanged {
            failures.withLock { $0.removeAll() }
        }
    }

    /// The key `id` as stored (memory).
    public func key(id: String) -> AccessKey? { keys.withLock { $0.byID[id] } }


    /// The server-made key `authorization` carried when it verified before, unless it has
    /// expired since (nil: the full check decides).
    public func rememberedKey(authorization: String) -> AccessKey? {
        // On the header's bytes, without a copy: every request with a key comes here.
        var header = authorization
        let found = header.withUTF8 { bytes -> (text: [UInt8], key: AccessKey)? in
            guard let token = Self.bearerBytes(bytes), token.count == KeySecret.length else { return nil }
            let id = String(decoding: UnsafeBufferPointer(rebasing: token.prefix(KeySecret.idPrefixLength)), as: UTF8.self)
            guard let entry = keys.withLock({ $0.remembered[id] }), entry.text.count == token.count else { return nil }
            var difference: UInt8 = 0
            entry.text.withUnsafeBufferPointer { stored in
                for offset in 0..<stored.count { difference |= stored[offset] ^ token[token.startIndex + offset] }
            }
            return difference == 0 ? entry : nil
        }
        guard let found, !found.key.isExpired(at: clock()) else { return nil }
        return found.key
    }

    /// The token of `Bearer <token>` in a header's bytes (scheme case-insensitive, ASCII
    /// white space around it left out), nil for anything else: ``bearerToken(_:)`` without
    /// building a string.
    private static let bearerScheme = Array("bearer".utf8)

    static func bearerBytes(_ header: UnsafeBufferPointer<UInt8>) -> Slice<UnsafeBufferPointer<UInt8>>? {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
        var start = header.startIndex
        var end = header.endIndex
        while start < end, isSpace(header[start]) { start += 1 }
        while end > start, isSpace(header[end - 1]) { end -= 1 }
        let scheme = bearerScheme
        guard end - start > scheme.count, header[start + scheme.count] == 0x20 else { return nil }
        for (offset, letter) in scheme.enumerated() where header[start + offset] | 0x20 != letter { return nil }
        start += scheme.count
        while start < end, isSpace(header[start]) { start += 1 }
        return start < end ? header[start..<end] : nil
    }

    /// Remembers that `secret` is `key`'s, if the keys in memory still hold it as it
    /// was checked (a reload in between may have changed or revoked it).
    private func remember(_ secret: KeySecret, _ key: AccessKey) {
        keys.withLock { table in
            guard table.byID[key.id] == key else { return }
            table.remembered[key.id] = (Array(secret.text.utf8), key)
        }
    }

    /// Replaces the failure records in memory with the stored ones, when other instances
    /// record failures too (`shared`; one process keeps memory and store equal by itself).
    public func reloadFailures() throws {
        guard shared else { return }
        let stored = try store.allFailedAttempts()
        failures.withLock { $0 = stored }
    }

    /// Whether an admin key for every library without an expiry exists (from memory): the lock
    /// may be turned on only then, or nobody could turn it off again.
    public var hasAdminKey: Bool { keys.withLock { $0.byID.values.contains(where: Self.keepsTheLockOpenable) } }

    /// Whether `key` is one the lock may rest on: admin, for every library, never expiring.
    static func keepsTheLockOpenable(_ key: AccessKey) -> Bool {
        key.allows(.admin) && key.libraries == nil && key.expiresAt == nil
    }

    /// The key `authorization` presents, if it is right and not expired, from memory alone (no
    /// slow hash: the passcode counts only as the one that verified last).
    public func verifiedKey(authorization: String?) -> AccessKey? {
        if let authorization, let key = rememberedKey(authorization: authorization) { return key }
        guard let presented = Self.bearerToken(authorization) else { return nil }
        if let secret = KeySecret.parse(presented) {
            guard let stored = key(id: secret.id), secret.matches(stored.secret), !stored.isExpired(at: clock()) else { return nil }
            return stored
        }
        guard cachedMatch(Array(presented.utf8)), let token = key(id: AccessKey.tokenID), !token.isExpired(at: clock()) else { return nil }
        return token
    }

    /// The public id of the key `authorization` presents (right or not), for logs: the first
    /// 11 characters of a server-made key, `token` for anything else sent as a bearer (the
    /// passcode of earlier versions), nil for none. Never any part of a secret.
    public static func presentedKeyID(authorization: String?) -> String? {
        guard let presented = bearerToken(authorization) else { return nil }
        return KeySecret.parse(presented)?.id ?? AccessKey.tokenID
    }

    /// What a right server-made key may still do from a locked address, per address: a
    /// bucket of ``lockedBurst`` requests refilled at ``lockedRate`` a second while the lock
    /// lasts (the address's holders keep working; a flood from it stays bounded).
    static let lockedRate = 10.0
    static let lockedBurst = 20.0
    private let allowances = Mutex<[String: (tokens: Double, at: Date)]>([:])

    /// nil when a right server-made key from `client` may go on: the address is not locked,
    /// or has allowance left (one request is taken from it); `.throttled` otherwise.
    func allowance(client: String) -> Decision? {
        let now = clock()
        guard failures.withLock({ $0[client] })?.lockRemaining(at: now) != nil else { return nil }
        let allowed = allowances.withLock { all -> Bool in
            if all.count >= maxFailureRecords {
                let locked = failures.withLock { records in Set(records.filter { $0.value.lockRemaining(at: now) != nil }.keys) }
                all = all.filter { locked.contains($0.key) }
            }
            var bucket = all[client] ?? (Self.lockedBurst, now)
            bucket.tokens = min(Self.lockedBurst, bucket.tokens + max(0, now.timeIntervalSince(bucket.at)) * Self.lockedRate)
            bucket.at = now
            let allowed = bucket.tokens >= 1
            if allowed { bucket.tokens -= 1 }
            all[client] = bucket
            return allowed
        }
        return allowed ? nil : .throttled(retryAfter: 1)
    }

    /// Requests each key was let in for, by id (ids of keys since deleted stay until restart).
    private let uses = Mutex<[String: Int]>([:])

    /// Counts one request let in with the key `id`.
    func countUse(of id: String) { uses.withLock { $0[id, default: 0] += 1 } }

    /// Requests let in per key id.
    public var keyUses: [String: Int] { uses.withLock { $0 } }

    /// The failure record of the key `id` (beside the addresses' records, which never start so).
    static func keyRecord(_ id: String) -> String { "key:" + id }

    /// Whether the request can be decided from memory alone: no key, a right server-made key,
    /// a locked address or key, or the passcode that verified last from an address with no
    /// failures to clear. Anything else needs a PBKDF2 hash or a write, which must not run on
    /// an event loop.
    public func isQuick(authorization: String?, client: String) -> Bool {
        let now = clock()
        guard let presented = Self.bearerToken(authorization) else { return true }
        let addressLocked = failures.withLock { $0[client] }?.lockRemaining(at: now) != nil
        if let secret = KeySecret.parse(presented) {
            guard let stored = key(id: secret.id) else { return addressLocked }
            if secret.matches(stored.secret) { return true }
            return addressLocked || failures.withLock { $0[Self.keyRecord(stored.id)] }?.lockRemaining(at: now) != nil
        }
        if addressLocked { return true }
        return failures.withLock({ $0[client] }) == nil && cachedMatch(Array(presented.utf8))
    }

    /// Checks the `Authorization` header value of a request from `client`: a key with the
    /// shape of a server-made one by its SHA-256 (see `check(_:client:now:)`), anything else as
    /// the passcode.
    ///
    /// A passcode that is not the cached one is counted as a failure *before* it is hashed (and
    /// the count taken back if it is right), so concurrent guesses from one address cannot
    /// get past the attempt limit, and a locked address gets its 429 without any hashing. The
    /// hash runs on `hashing`, checks from different addresses at once; no lock is held
    /// across it.
    public func check(authorization: String?, client: String) throws -> Decision {
        let now = clock()
        // Shared: a decision that is not quick (it runs on a worker and touches the store
        // anyway) starts from the stored record, so another instance's lockout counts at once.
        let presented = Self.bearerToken(authorization)
        let secret = presented.flatMap(KeySecret.parse)
        if shared, !isQuick(authorization: authorization, client: client) {
            var records = [client]
            if let secret, key(id: secret.id) != nil { records.append(Self.keyRecord(secret.id)) }
            for record in records {
                let stored = try store.failedAttempts(client: record)
                failures.withLock { $0[record] = Self.merged(stored: stored, memory: $0[record]) }
            }
        }
        if let secret { return try check(secret, client: client, now: now) }
        if let locked = lockout(client: client, now: now) { return locked }
        guard let presented else { return .unauthorized(invalidToken: false) }
        guard let tokenKey = key(id: AccessKey.tokenID) else {
            try recordFailure(client: client, now: now)
            return lockout(client: client, now: now) ?? .unauthorized(invalidToken: true)
        }
        // An expired passcode is refused before any hash, like an expired key (never a guess
        // that counts: it tells nothing about the secret).
        if tokenKey.isExpired(at: now) { return .unauthorized(invalidToken: true, expired: true) }
        let bytes = Array(presented.utf8)
        if cachedMatch(bytes) {
            try clearFailures(client: client, now: now)
            return lockout(client: client, now: now) ?? .allowed(tokenKey)
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
                return lockout(client: client, now: now) ?? .allowed(tokenKey)
            }
            try persist(client: client)
            return .allowed(tokenKey)
        case false?:
            if shared {
                try recordSharedFailure(client: client, now: now, limit: access.attemptLimit, interval: interval)
            } else {
                try persist(client: client)
            }
            return .unauthorized(invalidToken: true)
        }
    }

    /// The check of a key with the shape of a server-made one: right (and not expired) wherever
    /// it comes from; wrong or unknown counted against the address and, for a known id, the key.
    private func check(_ secret: KeySecret, client: String, now: Date) throws -> Decision {
        let stored = key(id: secret.id)
        if let stored, secret.matches(stored.secret) {
            if stored.isExpired(at: now) { return .unauthorized(invalidToken: true, expired: true) }
            remember(secret, stored)
            return .allowed(stored)
        }
        if let locked = lockout(client: client, now: now) { return locked }
        let keyRecord = stored.map { Self.keyRecord($0.id) }
        if let keyRecord, let remaining = failures.withLock({ $0[keyRecord] })?.lockRemaining(at: now) {
            return .keyLocked(retryAfter: max(1, Int(remaining.rounded(.up))))
        }
        try recordFailure(client: client, now: now)
        if let keyRecord { try recordFailure(client: keyRecord, now: now) }
        return .unauthorized(invalidToken: true)
    }

    /// Counts one failure for `client` (an address or a key's record), in memory and in the store.
    private func recordFailure(client: String, now: Date) throws {
        let access = settings.current.access
        let interval = TimeInterval(access.checkIntervalSeconds)
        if shared { return try recordSharedFailure(client: client, now: now, limit: access.attemptLimit, interval: interval) }
        failures.withLock { all in
            all[client] = FailedAttempts.afterFailure(all[client], now: now, limit: access.attemptLimit, interval: interval)
            Self.evict(&all, keeping: maxFailureRecords, now: now, interval: interval)
        }
        try persist(client: client)
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
        guard let stored = key(id: AccessKey.tokenID)?.secret else { return nil }
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
        guard let stored = key(id: AccessKey.tokenID)?.secret, let (record, digest) = digest(presented) else { return false }
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
