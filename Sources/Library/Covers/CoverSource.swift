/// Where the domain gets album covers from (the tutorial's `downloadImage:` plus
/// `saveImage:/getImage:`): a disk cache in front of an upstream fetcher. The `Covers` module
/// implements it with curl; tests may use a fake.
///
/// Every method is synchronous and may be called from any thread; `cover(for:wait:)` blocks the
/// caller for at most `wait` (call it from a worker thread, never from an event loop). Fetches
/// run on threads the implementation owns, so a caller that stops waiting does not cancel
/// the fetch: the next caller finds the result.
public protocol CoverSource: Sendable {
    /// The cover for `url`: from the cache when present (a stale copy is served while it is
    /// revalidated in the background), otherwise fetched, waiting at most `wait` for it.
    /// Concurrent calls for one URL share one upstream fetch.
    /// - Returns: `.ready` with the cached file, or `.loading` when the fetch outlasted `wait`.
    /// - Throws: ``CoverError`` saying what the upstream did (status, timeout, too large, not an
    ///   image, blocked address, ...), also while a recent failure is remembered.
    func cover(for url: String, wait: Duration) throws(CoverError) -> CoverResult

    /// What is known about `url` right now, without starting a fetch; nil when nothing is.
    func state(for url: String) -> CoverState?

    /// Starts a background fetch of `url` unless it is cached, loading, or recently failed
    /// (adding an album calls it). Returns at once.
    func prefetch(url: String)

    /// Forgets `url`: removes the cached file and any remembered failure
    /// (`DELETE /albums/{id}/cover`). A fetch in progress still answers its waiters but is not
    /// stored.
    func evict(url: String)
}
