import Library

/// Sized variants of covers (`GET .../cover?size=N`), made from the cached original.
/// ``CoverService`` implements it; the server's routes call it from a worker thread.
public protocol CoverVariantSource: Sendable {
    /// The variant of the cover at `url`: the original is had as by ``CoverSource/cover(for:wait:)``
    /// (fetched on a miss), then the variant is served from the cache or made, waiting at most
    /// `wait` in all.
    /// - Throws: ``CoverError``: what the upstream did, or `imageTooLarge` / `imageUnreadable`
    ///   for an original that cannot be scaled.
    func variant(_ variant: CoverVariant, for url: String, wait: Duration) throws(CoverError) -> CoverResult

    /// The variant when it is cached for a fresh original, without waiting or starting
    /// anything (the event loop's fast path); nil otherwise.
    func cachedVariant(_ variant: CoverVariant, for url: String) -> CachedCover?
}

extension CoverService: CoverVariantSource {
    public func variant(_ variant: CoverVariant, for url: String, wait: Duration) throws(CoverError) -> CoverResult {
        let started = clock.nanoseconds()
        let original: CachedCover
        switch try cover(for: url, wait: wait, counted: false) {
        case .ready(let cover): original = cover
        case .loading: return .loading
        }
        let spent = Duration.nanoseconds(Int64(clamping: clock.nanoseconds() &- started))
        let key = try keys.key(url)
        return try variants.variant(variant, of: original, url: key, wait: max(.zero, wait - spent))
    }

    public func cachedVariant(_ variant: CoverVariant, for url: String) -> CachedCover? {
        // The original's record only (no file check): the variant's own file is what is sent.
        guard let key = try? keys.key(url), let record = cache.peek(key) else { return nil }
        let original = cover(from: record)
        guard original.freshUntil > now() else { return nil }
        // Counted as a variant hit (not a cover hit); the original counts as used too, so a
        // scroller that only asks for sizes keeps the originals its variants are checked against
        // instead of having them evicted first and fetched again.
        guard let served = variants.cached(variant, of: original, url: key) else { return nil }
        _ = cache.lookup(key)
        return served
    }
}
