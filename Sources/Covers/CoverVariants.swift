import Crypto
import Essentials
import Foundation
import Images
import Library
import Synchronization

/// Makes and caches the sized variants of cached covers (``CoverVariant``).
///
/// - Made from the original's bytes by ``Thumbnailer`` on `maxConcurrentVariants` threads of
///   their own (never the caller's event loop), which also bounds the memory decoding takes.
/// - Stored in the cover cache beside the originals (same size limit, LRU order and atomic
///   writes), under a key of their own, with the original's entity tag as `source`: a variant
///   of other bytes than the original's current ones is never served, it is made again.
/// - Coalesced: concurrent requests for one variant of one original share one thumbnail.
/// - A refused or failed variant (pixel bomb, truncated or corrupt original, an encoder
///   failure) caches no bytes, but the failure is remembered for `failureMemory` per variant
///   and original entity tag: repeated requests do not decode a broken original again.
/// - Queued on a small queue of their own (`4 × threads`); past it a request fails at once
///   with `variantsBusy` (503 with `Retry-After`) instead of waiting behind thousands of jobs.
final class CoverVariants: Sendable {
    /// A variant that failed, for one original's bytes, until `until` (monotonic nanoseconds).
    private struct Failure {
        let source: String
        let error: CoverError
        let until: UInt64
    }

    /// Jobs a variant thread may have waiting, per thread.
    static let queuedPerThread = 4
    /// Remembered failures past which expired ones are swept.
    private static let failureSweepThreshold = 1024

    /// One variant being made, shared by everyone who asked for it meanwhile.
    final class Flight: Sendable {
        let key: String
        /// The original's entity tag.
        let source: String
        let outcome = SingleFlight<Result<CachedCover, CoverError>>()

        init(key: String, source: String) {
            self.key = key
            self.source = source
        }
    }

    private enum Step {
        case wait(Flight)
        case serve(CachedCover)
    }

    private let cache: CoverDiskCache
    private let thumbnailer: Thumbnailer
    private let threads: BoundedThreadPool
    private let counters: CoverCounters
    private let flights = Mutex<[String: Flight]>([:])
    private let failures = Mutex<[String: Failure]>([:])
    private let clock: any MonotonicClock
    private let failureMemory: Duration

    init(
        cache: CoverDiskCache, thumbnailer: Thumbnailer, threads: Int, counters: CoverCounters,
        clock: any MonotonicClock, failureMemory: Duration
    ) {
        self.cache = cache
        self.thumbnailer = thumbnailer
        self.counters = counters
        self.clock = clock
        self.failureMemory = failureMemory
        let threads = max(1, threads)
        self.threads = BoundedThreadPool(threads: threads, queueLimit: Self.queuedPerThread * threads, name: "cover-variant")
    }

    deinit { threads.shutdown(.cancelQueued) }

    func shutdown() { threads.shutdown(.cancelQueued) }

    /// The cached variant of `original` (whose cache key is `url`), counted as a use; nil when
    /// none is cached for the original's current bytes.
    func cached(_ variant: CoverVariant, of original: CachedCover, url: String) -> CachedCover? {
        let (record, _) = cache.present(variant.key(of: url), use: true)
        guard let record, record.source == original.etag else { return nil }
        counters.variantHits.increment()
        return cover(from: record, original: original)
    }

    /// The variant of `original`, made (or waited for) when it is not cached; `.loading` when
    /// it is not ready within `wait`.
    /// - Throws: ``CoverError`` `imageTooLarge`, `imageUnreadable`, `variantEncodeFailed` (also
    ///   remembered ones), `variantsBusy` (its queue is full), `imagesUnavailable`, or
    ///   `unavailable` (shutting down).
    func variant(_ variant: CoverVariant, of original: CachedCover, url: String, wait: Duration) throws(CoverError) -> CoverResult {
        if let cached = cached(variant, of: original, url: url) { return .ready(cached) }
        let key = variant.key(of: url)
        if let remembered = rememberedFailure(key, source: original.etag) { throw remembered }
        var started: Flight?
        // Under the lock, the cache is asked again: a flight that finished since the first look
        // has stored its variant (before leaving the registry), so none is made twice.
        let step = flights.withLock { flights -> Step in
            if let running = flights[key], running.source == original.etag { return .wait(running) }
            // With the file checked: another process sharing the directory may have removed it.
            if let record = cache.present(key, use: true).record, record.source == original.etag {
                return .serve(cover(from: record, original: original))
            }
            let flight = Flight(key: key, source: original.etag)
            flights[key] = flight
            started = flight
            return .wait(flight)
        }
        let flight: Flight
        switch step {
        case .wait(let found): flight = found
        case .serve(let stored):
            counters.variantHits.increment()
            return .ready(stored)
        }
        if let started {
            let queued = threads.submit(
                { self.make(started, variant, original: original) },
                cancel: { self.finish(started, .failure(Self.unavailable)) })
            if !queued {
                finish(started, .failure(CoverError(
                    .variantsBusy, detail: "Too many sized covers are waiting to be made; retry shortly, or ask without size.")))
            }
        }
        switch flight.outcome.wait(timeout: wait) {
        case nil: return .loading
        case .success(let cover): return .ready(cover)
        case .failure(let error): throw error
        }
    }

    /// Removes every variant of `url` and lets running flights finish without storing.
    func invalidate(url: String) {
        let keys = CoverVariant.allKeys(of: url)
        flights.withLock { flights in for key in keys { flights[key] = nil } }
        failures.withLock { failures in for key in keys { failures[key] = nil } }
        for key in keys { cache.remove(key) }
    }

    /// On a variant thread: decode, scale, encode, store, answer the waiters.
    private func make(_ flight: Flight, _ variant: CoverVariant, original: CachedCover) {
        let bytes: [UInt8]
        switch original.content {
        case .memory(let memory): bytes = memory
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                finish(flight, .failure(CoverError(.unavailable, detail: "The original cover was replaced meanwhile; retry.")))
                return
            }
            bytes = Array(data)
        }
        let thumbnail: Thumbnailer.Thumbnail
        do {
            thumbnail = try thumbnailer.thumbnail(of: bytes, longestSide: variant.size, format: variant.format.thumbnailFormat)
        } catch {
            counters.variantFailures.increment()
            let failure = Self.coverError(error)
            if failure.reason != .imagesUnavailable { remember(failure, of: flight) }
            finish(flight, .failure(failure))
            return
        }
        counters.variantsMade.increment()
        var stored: CoverCacheRecord?
        if case .file = original.content, isCurrent(flight) {
            // Under the cross-process fetch lock of the variant's key, as originals are stored:
            // a process opening the shared directory meanwhile drops image files without a
            // record only when that lock is free.
            let lock = cache.lockFetch(flight.key, timeout: .seconds(5))
            defer { withExtendedLifetime(lock) {} }
            stored = cache.store(
                url: flight.key, bytes: thumbnail.bytes, mediaType: thumbnail.format.mediaType,
                fileExtension: thumbnail.format.fileExtension, upstreamETag: nil, upstreamLastModified: nil,
                validatedAt: original.validatedAt, source: original.etag)
            // Invalidated while storing: the invalidation wins.
            if let record = stored, !isCurrent(flight) {
                cache.remove(flight.key, ifFile: record.file)
                stored = nil
            }
        }
        if let stored {
            finish(flight, .success(cover(from: stored, original: original)))
        } else {
            let hash = SHA256.hex(SHA256.hash(thumbnail.bytes))
            finish(flight, .success(CachedCover(
                url: original.url, content: .memory(thumbnail.bytes), mediaType: thumbnail.format.mediaType,
                length: thumbnail.bytes.count, etag: "\"" + hash.prefix(32) + "\"", validatedAt: original.validatedAt,
                freshUntil: original.freshUntil)))
        }
    }

    private func finish(_ flight: Flight, _ outcome: Result<CachedCover, CoverError>) {
        flights.withLock { flights in
            if flights[flight.key] === flight { flights[flight.key] = nil }
        }
        flight.outcome.complete(outcome)
    }

    /// The failure remembered for `key` made from the bytes tagged `source`, while it lasts.
    private func rememberedFailure(_ key: String, source: String) -> CoverError? {
        let tick = clock.nanoseconds()
        return failures.withLock { failures -> CoverError? in
            guard let failure = failures[key], failure.source == source, failure.until > tick else { return nil }
            return failure.error
        }
    }

    /// Remembers `error` for the flight's variant and original, for `failureMemory` (only while
    /// the flight is current: an invalidation meanwhile forgets it).
    private func remember(_ error: CoverError, of flight: Flight) {
        let tick = clock.nanoseconds()
        let (until, overflow) = tick.addingReportingOverflow(failureMemory.nanoseconds)
        guard failureMemory > .zero, isCurrent(flight) else { return }
        failures.withLock { failures in
            if failures.count >= Self.failureSweepThreshold { failures = failures.filter { $0.value.until > tick } }
            failures[flight.key] = Failure(source: flight.source, error: error, until: overflow ? .max : until)
        }
    }

    private func isCurrent(_ flight: Flight) -> Bool {
        flights.withLock { $0[flight.key] === flight }
    }

    /// A variant record served with the original's freshness (it follows the original).
    private func cover(from record: CoverCacheRecord, original: CachedCover) -> CachedCover {
        CachedCover(
            url: original.url, content: .file(path: cache.path(of: record)), mediaType: record.mediaType,
            length: record.length, etag: record.etag, validatedAt: original.validatedAt, freshUntil: original.freshUntil)
    }

    static func coverError(_ error: ImageError) -> CoverError {
        switch error.reason {
        case .tooManyPixels:
            CoverError(.imageTooLarge, detail: "The cover was refused: \(error.detail).")
        case .unreadable, .corrupt:
            CoverError(.imageUnreadable, detail: "The cover could not be decoded (truncated or corrupt?): \(error.detail).")
        case .encodeFailed:
            CoverError(.variantEncodeFailed, detail: "The sized cover could not be encoded by the server: \(error.detail).")
        case .unavailable:
            CoverError(.imagesUnavailable, detail: "Sized covers cannot be made on this server: \(error.detail).")
        }
    }

    private static let unavailable = CoverError(.unavailable, detail: "The cover service is shutting down.")
}
