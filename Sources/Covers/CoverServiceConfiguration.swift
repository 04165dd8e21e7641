import Images

/// Settings of the cover service: where the cache lives, how big it may grow, how long copies
/// and failures are trusted, and how many fetches run at once.
public struct CoverServiceConfiguration: Sendable {
    /// The cache directory (created if missing). Only files named by hex hashes are written
    /// in it, so no URL can make the cache write elsewhere.
    public var cacheDirectory: String
    /// Largest total size of cached images; past it the least recently used are removed until
    /// `trimRatio` of it is left. Default 512 MiB.
    public var cacheSizeLimit: Int
    /// Default 0.7.
    public var trimRatio: Double
    /// How long a fetched copy is served without asking the upstream again; after it, the copy
    /// is still served while a conditional request revalidates it. Default 24 h.
    public var freshness: Duration
    /// How long a failed fetch is remembered (and answered from memory) before the upstream is
    /// asked again; also the pause after a failed revalidation. Default 60 s.
    public var failureMemory: Duration
    /// Fetches running at once (threads the service owns). Default 8.
    public var maxConcurrentFetches: Int
    /// Fetches waiting for a thread at most; past it new fetches fail as `unavailable`.
    /// Default 10,000.
    public var maxQueuedFetches: Int
    public var fetcher: CoverFetcherConfiguration
    /// How sized variants are made (pixel limit, quality). Default ``Thumbnailer/init(maxPixels:quality:avifEffort:)``'s.
    public var thumbnailer: Thumbnailer = Thumbnailer()
    /// Variants made at once (threads the service owns; each decodes one image, so this also
    /// bounds the memory decoding takes: up to `maxConcurrentVariants × maxPixels × 8` bytes).
    /// Their own queue holds 4 jobs per thread (not `maxQueuedFetches`); past it a request
    /// fails as `variantsBusy`. Default 2.
    public var maxConcurrentVariants: Int = 2

    public init(
        cacheDirectory: String, cacheSizeLimit: Int = 512 * 1024 * 1024, trimRatio: Double = 0.7,
        freshness: Duration = .seconds(24 * 3600), failureMemory: Duration = .seconds(60),
        maxConcurrentFetches: Int = 8, maxQueuedFetches: Int = 10_000,
        fetcher: CoverFetcherConfiguration = CoverFetcherConfiguration()
    ) {
        self.cacheDirectory = cacheDirectory
        self.cacheSizeLimit = cacheSizeLimit
        self.trimRatio = trimRatio
        self.freshness = freshness
        self.failureMemory = failureMemory
        self.maxConcurrentFetches = maxConcurrentFetches
        self.maxQueuedFetches = maxQueuedFetches
        self.fetcher = fetcher
    }
}
