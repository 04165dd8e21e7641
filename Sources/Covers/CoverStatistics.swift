import Library
import Synchronization

/// Counts of what the cover service did since it started, as plain numbers (the server turns
/// them into metrics; nothing here knows a metrics format).
public struct CoverStatistics: Sendable, Equatable {
    /// Requests for an original cover answered from the disk cache (fresh, or stale while it
    /// is revalidated); each request counts once. Sized variants count in `variantHits`.
    public var hits: Int
    /// Requests for an original cover that found no cached copy (they waited for a fetch, or
    /// got a remembered failure).
    public var misses: Int
    /// Cached files removed to keep the cache under its size limit (not explicit evictions).
    public var evictions: Int
    /// Image bytes in the cache right now (originals and variants: one budget), how many
    /// original covers, and how many sized variants.
    public var cachedBytes: Int
    public var cachedCovers: Int
    public var cachedVariants: Int = 0
    /// Upstream fetches by outcome: `image`, `not-modified`, or a ``CoverError/Reason`` raw
    /// value (`timeout`, `upstream-status`, ...). Every outcome is listed, zeros included.
    public var fetches: [(outcome: String, count: Int)]
    /// Misses answered by a copy another process sharing the cache directory stored while this
    /// one waited for the cover's fetch lock (no upstream fetch here).
    public var adopted: Int = 0
    /// Sized variants (`?size=`): made (thumbnails encoded), answered from the cache, and
    /// refused or failed (a pixel bomb, a truncated or corrupt original).
    public var variantsMade: Int = 0
    public var variantHits: Int = 0
    public var variantFailures: Int = 0

    public static func == (a: CoverStatistics, b: CoverStatistics) -> Bool {
        a.hits == b.hits && a.misses == b.misses && a.evictions == b.evictions && a.cachedBytes == b.cachedBytes
            && a.cachedCovers == b.cachedCovers && a.cachedVariants == b.cachedVariants && a.fetches.map(\.outcome) == b.fetches.map(\.outcome)
            && a.fetches.map(\.count) == b.fetches.map(\.count) && a.adopted == b.adopted
            && a.variantsMade == b.variantsMade && a.variantHits == b.variantHits && a.variantFailures == b.variantFailures
    }
}

/// Lock-free counters behind ``CoverStatistics``: one atomic per fixed outcome.
final class CoverCounters: Sendable {
    final class Count: Sendable {
        let value = Atomic<Int>(0)
        func increment() { value.wrappingAdd(1, ordering: .relaxed) }
        var current: Int { value.load(ordering: .relaxed) }
    }

    /// Fetch outcomes in a fixed order: the two successes, then every failure reason.
    static let outcomes: [String] = ["image", "not-modified"] + fetchFailures.map(\.rawValue)
    /// The failure reasons a fetch can end with (the variant reasons are not fetch outcomes).
    static let fetchFailures = CoverError.Reason.allCases.filter { !$0.isVariantFailure }

    let hits = Count()
    let misses = Count()
    let adoptions = Count()
    let variantsMade = Count()
    let variantHits = Count()
    let variantFailures = Count()
    private let fetchCounts: [Count] = CoverCounters.outcomes.map { _ in Count() }

    func recordFetch(_ result: Result<UpstreamResponse, CoverError>) {
        let index: Int
        switch result {
        case .success(.image): index = 0
        case .success(.notModified): index = 1
        case .failure(let error): index = 2 + (Self.fetchFailures.firstIndex(of: error.reason) ?? 0)
        }
        fetchCounts[index].increment()
    }

    var fetches: [(outcome: String, count: Int)] {
        zip(Self.outcomes, fetchCounts).map { (outcome: $0, count: $1.current) }
    }
}
