import Crypto
import Essentials
import Foundation
import Library
import Synchronization

/// The cover source the server uses: a disk cache in front of a curl fetcher, with coalescing,
/// a negative cache, revalidation and background prefetch. Implements ``CoverSource``.
///
/// ```swift
/// let covers = try CoverService(configuration: .init(cacheDirectory: "/var/cache/bluelibrary/covers"))
/// switch try covers.cover(for: album.coverUrl!, wait: .seconds(5)) {
/// case .ready(let cover): // stream cover.content with cover.mediaType, cover.etag
/// case .loading:          // 504, or 202 + Retry-After
/// }
/// ```
///
/// Threading: every method may be called from any thread and returns without network I/O,
/// except that `cover(for:wait:)` blocks up to `wait` on a miss. Fetches run on
/// `maxConcurrentFetches` threads the service owns. URLs are compared in the normal form of
/// ``CoverURL`` (`CachedCover.url` and event URLs are in that form).
public final class CoverService: CoverSource {
    private struct RememberedFailure {
        let error: CoverError
        /// Wall time, as reported by `state(for:)`.
        let at: Date
        /// The monotonic clock's nanoseconds until which the failure is answered from memory.
        let until: UInt64
    }

    private struct Registry {
        var flights: [String: CoverFlight] = [:]
        var failures: [String: RememberedFailure] = [:]
        /// After a failed revalidation, no new one before this (monotonic nanoseconds; the
        /// stale copy is served meanwhile).
        var revalidationPause: [String: UInt64] = [:]
        var stopped = false
    }

    private enum Plan {
        case serve(CachedCover)
        case fail(CoverError)
        case wait(CoverFlight)
    }

    /// What `update` changes at runtime; read by every new fetch and freshness check.
    private struct Tunables {
        var freshness: Duration
        /// nil: the fetcher's own configuration.
        var fetchTimeout: Duration?
        var addressPolicy: CoverAddressPolicy?
    }

    /// Failures kept at most before expired ones are swept.
    private static let failureSweepThreshold = 1024

    /// The configuration the service was opened with (``update(cacheSizeLimit:fetchTimeout:freshness:addressPolicy:)``
    /// may have replaced some of its values since; see ``cacheSizeLimit``).
    public let configuration: CoverServiceConfiguration
    private let tunables: Mutex<Tunables>
    let cache: CoverDiskCache
    private let fetcher: any CoverFetching
    private let events: (any CoverEventSink)?
    let now: @Sendable () -> Date
    let clock: any MonotonicClock
    private let threads: BoundedThreadPool
    private let registry = Mutex(Registry())
    let counters: CoverCounters
    let variants: CoverVariants
    /// URL to cache key, for the fast paths (``state(for:)``, ``cachedVariant(_:for:)``).
    let keys = CoverKeys()

    /// Opens the cache directory (reading the index left by an earlier run) and starts the
    /// fetch threads.
    /// - Parameters:
    ///   - fetcher: the upstream; default a ``CurlCoverFetcher`` with `configuration.fetcher`.
    ///   - events: receives `cover.loaded` / `cover.failed`.
    ///   - now: the wall clock for what is stored or shown (a copy's `validatedAt`, hence its
    ///     freshness, which must survive a restart; when a failure happened).
    ///   - clock: the monotonic clock for ages kept only in memory (how long a failure is
    ///     remembered, the pause after a failed revalidation, how often a hit touches its
    ///     record on disk). Tests pass manual clocks for both instead of sleeping.
    /// - Throws: ``CoverCacheOpenError`` when the cache directory cannot be created or read.
    public init(
        configuration: CoverServiceConfiguration, fetcher: (any CoverFetching)? = nil,
        events: (any CoverEventSink)? = nil, now: @escaping @Sendable () -> Date = { Date() },
        clock: any MonotonicClock = SystemClock()
    ) throws(CoverCacheOpenError) {
        self.configuration = configuration
        tunables = Mutex(Tunables(freshness: configuration.freshness))
        cache = try CoverDiskCache(
            directory: configuration.cacheDirectory, sizeLimit: configuration.cacheSizeLimit,
            trimRatio: configuration.trimRatio, clock: clock)
        self.clock = clock
        self.fetcher = fetcher
            ?? CurlCoverFetcher(configuration: configuration.fetcher, pooledHandles: configuration.maxConcurrentFetches)
        self.events = events
        self.now = now
        threads = BoundedThreadPool(
            threads: configuration.maxConcurrentFetches, queueLimit: configuration.maxQueuedFetches, name: "cover-fetch")
        let counters = CoverCounters()
        self.counters = counters
        variants = CoverVariants(
            cache: cache, thumbnailer: configuration.thumbnailer, threads: configuration.maxConcurrentVariants,
            counters: counters, clock: clock, failureMemory: configuration.failureMemory)
        // Starts libvips and probes AVIF now (one small encode), not on the first request's
        // event loop, which asks whether AVIF can be offered.
        _ = CoverVariantFormat.canWriteAVIF
    }

    deinit {
        threads.shutdown(.cancelQueued)
    }

    /// Stops taking fetches: queued ones fail as `unavailable`, running ones finish on their
    /// threads. Cached covers are still served.
    public func shutdown() {
        registry.withLock { $0.stopped = true }
        threads.shutdown(.cancelQueued)
        variants.shutdown()
    }

    /// Changes settings at runtime (`PATCH /settings`); thread-safe, nil leaves a value as it is.
    ///
    /// - `cacheSizeLimit`: a smaller limit trims the cache at once (least recently used first,
    ///   down to `trimRatio` of it); a larger one only lets it grow.
    /// - `fetchTimeout` (the whole fetch, every hop) and `addressPolicy` (the SSRF guard's
    ///   allow-list) apply to fetches started afterwards; running ones keep theirs.
    /// - `freshness` applies to every later freshness check, of copies already cached too.
    public func update(
        cacheSizeLimit: Int? = nil, fetchTimeout: Duration? = nil, freshness: Duration? = nil,
        addressPolicy: CoverAddressPolicy? = nil
    ) {
        tunables.withLock { tunables in
            if let fetchTimeout { tunables.fetchTimeout = fetchTimeout }
            if let freshness { tunables.freshness = freshness }
            if let addressPolicy { tunables.addressPolicy = addressPolicy }
        }
        if let cacheSizeLimit, cacheSizeLimit != cache.sizeLimit { cache.setSizeLimit(cacheSizeLimit) }
    }

    /// The cache size limit in force.
    public var cacheSizeLimit: Int { cache.sizeLimit }

    // MARK: CoverSource

    public func cover(for url: String, wait: Duration) throws(CoverError) -> CoverResult {
        try cover(for: url, wait: wait, counted: true)
    }

    /// ``cover(for:wait:)``; `counted`: whether it counts as a cover hit or miss (a sized
    /// variant's look at its original does not: variants have counters of their own).
    func cover(for url: String, wait: Duration, counted: Bool) throws(CoverError) -> CoverResult {
        let url = try CoverURL(url)
        switch plan(url) {
        case .serve(let cover):
            if counted { counters.hits.increment() }
            return .ready(cover)
        case .fail(let error):
            if counted { counters.misses.increment() }
            throw error
        case .wait(let flight):
            if counted { counters.misses.increment() }
            switch flight.outcome.wait(timeout: wait) {
            case nil: return .loading
            case .success(let cover): return .ready(cover)
            case .failure(let error): throw error
            }
        }
    }

    public func state(for url: String) -> CoverState? {
        guard let key = try? keys.key(url) else { return nil }
        let now = now()
        let (present, adopted) = cache.present(key, use: false)
        if adopted { counters.adoptions.increment() }
        if let record = present {
            // A fresh copy is what the server's fast path sends without calling `cover(for:)`.
            if !isStale(record, now: now) { counters.hits.increment() }
            return .loaded(cover(from: record))
        }
        let tick = clock.nanoseconds()
        return registry.withLock { registry -> CoverState? in
            if registry.flights[key] != nil { return .loading }
            if let failure = registry.failures[key], failure.until > tick { return .failed(failure.error, at: failure.at) }
            return nil
        }
    }

    public func prefetch(url: String) {
        guard let url = try? CoverURL(url) else { return }
        _ = plan(url)
    }

    public func evict(url: String) {
        guard let key = try? keys.key(url) else { return }
        registry.withLock { registry in
            registry.flights[key] = nil
            registry.failures[key] = nil
            registry.revalidationPause[key] = nil
        }
        cache.remove(key)
        variants.invalidate(url: key)
    }

    // MARK: Internals

    /// Bytes of cached images right now.
    var cachedBytes: Int { cache.totalBytes }

    /// What the service did since it started (hits, misses, evictions, fetches by outcome).
    /// A fresh copy reported by `state(for:)` counts as a hit: the server serves it from there.
    /// Sized variants count only in the variant counters, never as cover hits or misses.
    public var statistics: CoverStatistics {
        let (bytes, count) = cache.usage
        let variantCount = cache.variantCount
        return CoverStatistics(
            hits: counters.hits.current, misses: counters.misses.current, evictions: cache.evictionCount,
            cachedBytes: bytes, cachedCovers: count - variantCount, cachedVariants: variantCount, fetches: counters.fetches, adopted: counters.adoptions.current,
            variantsMade: counters.variantsMade.current, variantHits: counters.variantHits.current,
            variantFailures: counters.variantFailures.current)
    }

    /// Whether no fetch is running or queued (tests wait for background revalidations).
    var isIdle: Bool { registry.withLock { $0.flights.isEmpty } }

    /// Decides what a request for `url` gets, starting a fetch (first or revalidation) if one
    /// is needed. The common case, a fresh copy, takes only the cache's lock.
    private func plan(_ url: CoverURL) -> Plan {
        let key = url.description
        let now = now()
        // `present`: an image another instance sharing the directory removed is never served
        // (its entry goes; a copy that instance stored instead is adopted, or the cover is fetched).
        let (present, adopted) = cache.present(key, use: true)
        if adopted { counters.adoptions.increment() }
        if let record = present, !isStale(record, now: now) {
            return .serve(cover(from: record))
        }
        var started: CoverFlight?
        let tick = clock.nanoseconds()
        let plan = registry.withLock { registry -> Plan in
            if let record = cache.peek(key) {
                let paused = registry.revalidationPause[key].map { $0 > tick } ?? false
                if isStale(record, now: now), registry.flights[key] == nil, !paused, !registry.stopped {
                    let flight = CoverFlight(url: url, revalidating: record)
                    registry.flights[key] = flight
                    started = flight
                }
                return .serve(cover(from: record))
            }
            if let failure = registry.failures[key] {
                if failure.until > tick { return .fail(failure.error) }
                registry.failures[key] = nil
            }
            if let flight = registry.flights[key] { return .wait(flight) }
            guard !registry.stopped else { return .fail(Self.unavailable) }
            let flight = CoverFlight(url: url, revalidating: nil)
            registry.flights[key] = flight
            started = flight
            return .wait(flight)
        }
        if let started { launch(started) }
        return plan
    }

    private func launch(_ flight: CoverFlight) {
        let queued = threads.submit(
            { self.run(flight) },
            cancel: { self.finish(flight, .failure(Self.unavailable)) })
        if !queued {
            finish(flight, .failure(CoverError(.unavailable, detail: "Too many cover fetches are waiting.")))
        }
    }

    /// On a fetch thread: asks the upstream, stores what it gave, answers the waiters.
    ///
    /// Across processes sharing the cache directory, the fetch runs under the cover's lock
    /// file (``CoverFetchLocks``): a process that waited for it first looks whether the holder
    /// stored a copy this flight can use, and then fetches nothing. The wait is bounded by the
    /// fetch timeout; past it the fetch runs unlocked.
    private func run(_ flight: CoverFlight) {
        let key = flight.url.description
        let waitLimit = tunables.withLock { $0.fetchTimeout } ?? configuration.fetcher.totalTimeout
        let lock = cache.lockFetch(key, timeout: waitLimit)
        defer { withExtendedLifetime(lock) {} }
        if let stored = cache.adopt(key), usable(stored, for: flight) {
            counters.adoptions.increment()
            finish(flight, .success(cover(from: stored)))
            return
        }
        let (timeout, policy) = tunables.withLock { ($0.fetchTimeout, $0.addressPolicy) }
        let request = UpstreamRequest(
            url: flight.url, etag: flight.revalidating?.upstreamETag,
            lastModified: flight.revalidating?.upstreamLastModified, totalTimeout: timeout, addressPolicy: policy)
        let result = fetcher.fetch(request)
        counters.recordFetch(result)
        let now = now()
        switch result {
        case .success(.image(let bytes, let format, let etag, let lastModified)):
            var stored: CoverCacheRecord?
            if isCurrent(flight) {
                stored = cache.store(
                    url: key, bytes: bytes, format: format, upstreamETag: etag, upstreamLastModified: lastModified,
                    validatedAt: now)
                // Evicted while storing: the eviction wins.
                if let record = stored, !isCurrent(flight) { cache.remove(key, ifFile: record.file) }
            }
            // New bytes replace the original: its variants go with the old ones.
            if let old = flight.revalidating, stored?.contentHash != old.contentHash { variants.invalidate(url: key) }
            if let stored {
                finish(flight, .success(cover(from: stored)))
            } else {
                let hash = SHA256.hex(SHA256.hash(bytes))
                finish(flight, .success(CachedCover(
                    url: key, content: .memory(bytes), mediaType: format.mediaType, length: bytes.count,
                    etag: "\"" + hash.prefix(32) + "\"", validatedAt: now, freshUntil: freshUntil(now))))
            }
        case .success(.notModified(let etag, let lastModified)):
            if let record = cache.refresh(url: key, validatedAt: now, upstreamETag: etag, upstreamLastModified: lastModified) {
                finish(flight, .success(cover(from: record)))
            } else {
                finish(flight, .failure(CoverError(
                    .transferFailed, upstreamStatus: 304, detail: "The upstream answered 304 for a copy no longer cached.")))
            }
        case .failure(let error):
            finish(flight, .failure(error))
        }
    }

    /// Records the outcome (negative cache, revalidation pause), publishes it, wakes the waiters.
    private func finish(_ flight: CoverFlight, _ outcome: Result<CachedCover, CoverError>) {
        let key = flight.url.description
        let now = now()
        let tick = clock.nanoseconds()
        let (until, overflow) = tick.addingReportingOverflow(configuration.failureMemory.nanoseconds)
        let remembered = overflow ? UInt64.max : until
        registry.withLock { registry in
            guard registry.flights[key] === flight else { return }
            registry.flights[key] = nil
            switch outcome {
            case .success:
                registry.failures[key] = nil
                registry.revalidationPause[key] = nil
            case .failure(let error) where error.reason != .unavailable:
                if flight.revalidating != nil {
                    registry.revalidationPause[key] = remembered
                } else {
                    if registry.failures.count >= Self.failureSweepThreshold {
                        registry.failures = registry.failures.filter { $0.value.until > tick }
                        registry.revalidationPause = registry.revalidationPause.filter { $0.value > tick }
                    }
                    registry.failures[key] = RememberedFailure(error: error, at: now, until: remembered)
                }
            case .failure:
                break
            }
        }
        // Published before the waiters wake, so whoever got the answer can rely on the event.
        switch outcome {
        case .success(let cover):
            events?.publish(.loaded(url: key, cover: cover))
        case .failure(let error) where flight.revalidating == nil && error.reason != .unavailable:
            events?.publish(.failed(url: key, error: error))
        case .failure:
            break
        }
        flight.outcome.complete(outcome)
    }

    /// Whether a copy another process stored answers `flight`: fresh, and for a revalidation
    /// confirmed after the copy being revalidated.
    private func usable(_ record: CoverCacheRecord, for flight: CoverFlight) -> Bool {
        guard !isStale(record, now: now()) else { return false }
        guard let revalidating = flight.revalidating else { return true }
        return record.validatedAt > revalidating.validatedAt
    }

    private func isCurrent(_ flight: CoverFlight) -> Bool {
        registry.withLock { $0.flights[flight.url.description] === flight }
    }

    private func isStale(_ record: CoverCacheRecord, now: Date) -> Bool {
        freshUntil(record.validatedAt) <= now
    }

    private func freshUntil(_ validatedAt: Date) -> Date {
        validatedAt.addingTimeInterval(tunables.withLock { $0.freshness }.seconds)
    }

    func cover(from record: CoverCacheRecord) -> CachedCover {
        CachedCover(
            url: record.url, content: .file(path: cache.path(of: record)), mediaType: record.mediaType,
            length: record.length, etag: record.etag, validatedAt: record.validatedAt,
            freshUntil: freshUntil(record.validatedAt))
    }

    private static let unavailable = CoverError(.unavailable, detail: "The cover service is shutting down.")
}
