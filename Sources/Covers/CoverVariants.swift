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
/// - A refused or failed variant (pixel bomb, truncated or corrupt original) is not cached
///   and not remembered: the next request tries again (cheap for a bomb: its header is enough).
final class CoverVariants: Sendable {
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

    init(cache: CoverDiskCache, thumbnailer: Thumbnailer, threads: Int, queueLimit: Int, counters: CoverCounters) {
        self.cache = cache
        self.thumbnailer = thumbnailer
        self.counters = counters
        self.threads = BoundedThreadPool(threads: max(1, threads), queueLimit: queueLimit, name: "cover-variant")
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
    /// - Throws: ``CoverError`` `imageTooLarge`, `imageUnreadable`, or `unavailable` (too many
    ///   variants queued, shutting down).
    func variant(_ variant: CoverVariant, of original: CachedCover, url: String, wait: Duration) throws(CoverError) -> CoverResult {
        if let cached = cached(variant, of: original, url: url) { return .ready(cached) }
        let key = variant.key(of: url)
        var started: Flight?
        // Under the lock, the cache is asked again: a flight that finished since the first look
        // has stored its variant (before leaving the registry), so none is made twice.
        let step = flights.withLock { flights -> Step in
            if let running = flights[key], running.source == original.etag { return .wait(running) }
            if let record = cache.peek(key), record.source == original.etag {
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
                finish(started, .failure(CoverError(.unavailable, detail: "Too many cover variants are waiting to be made.")))
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
            finish(flight, .failure(Self.coverError(error)))
            return
        }
        counters.variantsMade.increment()
        var stored: CoverCacheRecord?
        if case .file = original.content, isCurrent(flight) {
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
        case .unreadable, .corrupt, .encodeFailed:
            CoverError(.imageUnreadable, detail: "The cover could not be decoded (truncated or corrupt?): \(error.detail).")
        case .unavailable:
            CoverError(.unavailable, detail: "Cover variants cannot be made: \(error.detail).")
        }
    }

    private static let unavailable = CoverError(.unavailable, detail: "The cover service is shutting down.")
}
