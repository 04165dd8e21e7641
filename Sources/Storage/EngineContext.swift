import Synchronization

/// Spacing of the sparse order keys (see `SparseOrder.swift`), for either store.
public struct SparseKeySpacing: Sendable {
    /// Distance between album keys in a freshly (re)numbered bucket.
    public var positionGap: Int64
    /// Album keys stay within ±positionLimit; a bucket is renumbered before leaving it.
    public var positionLimit: Int64
    /// Distance between bucket keys when they are (re)numbered.
    public var bucketGap: Int64

    public init(positionGap: Int64 = 1 << 32, positionLimit: Int64 = 1 << 60, bucketGap: Int64 = 1 << 32) {
        self.positionGap = positionGap
        self.positionLimit = positionLimit
        self.bucketGap = bucketGap
    }

    /// Checks the spacing against `bucketSize` (a programming error when it does not fit).
    func validate(bucketSize: Int) {
        precondition(bucketSize >= 2, "bucketSize must be at least 2")
        precondition(positionGap >= 2 && bucketGap >= 2, "key gaps must be at least 2")
        precondition(
            positionLimit <= 1 << 60 && positionLimit / positionGap >= 4 * Int64(bucketSize) + 4,
            "positionLimit must leave room for a renumbered bucket and stay within 2^60")
        precondition(bucketGap <= 1 << 40, "bucketGap must leave room for many buckets")
    }
}

/// How often the ordering had to do its rarer work since the store was opened
/// (diagnostics and tests; counted even for transactions that later rolled back).
public struct AlbumOrderingCounters: Sendable, Equatable {
    public var bucketSplits = 0
    public var bucketMerges = 0
    /// Whole buckets renumbered.
    public var bucketRenumbers = 0
    /// Windows of keys re-spaced inside a bucket (the cheaper alternative to a renumbering).
    public var bucketRespaces = 0
    public var orderRenumbers = 0
    /// Bulk imports that dropped the sort indexes and rebuilt them before their commit
    /// (see `BulkImport.swift`).
    public var sortIndexRebuilds = 0
}

/// What every transaction of one store's album engine shares (`LibraryTransaction` and its
/// parts): the SQL dialect, the bucket layout, the saved-state bound and the counters.
final class EngineContext: Sendable {
    let dialect: SQLDialect
    let layout: BucketLayout
    /// `maxSavedStates` of the store's configuration (at least 1).
    let maxSavedStates: Int
    /// SQLite: how a search's pages use the search index (`SearchIndex`).
    let searchIndexLimits: SearchIndex.Limits
    let counters = Mutex(AlbumOrderingCounters())

    init(
        dialect: SQLDialect, bucketSize: Int, spacing: SparseKeySpacing, maxSavedStates: Int,
        searchIndexLimits: SearchIndex.Limits = SearchIndex.Limits()
    ) {
        self.dialect = dialect
        self.layout = BucketLayout(target: bucketSize, spacing: spacing)
        self.maxSavedStates = max(1, maxSavedStates)
        self.searchIndexLimits = searchIndexLimits
    }

    /// Adds one to a counter.
    func count(_ keyPath: WritableKeyPath<AlbumOrderingCounters, Int>) {
        counters.withLock { $0[keyPath: keyPath] += 1 }
    }
}
