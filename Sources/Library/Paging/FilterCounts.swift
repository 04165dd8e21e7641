import Essentials

/// How many albums a filter matches in one library at one version: the `total` of
/// `count=true` pages (and the source sizes a filtered offset page walks past), computed once
/// per (library, version, filter) and shared by every page of that filter at that version —
/// the next page, another sort, another limit, an offset, a view that has the library as a
/// source.
///
/// Rules:
/// - Exact: the key is the version the page's own snapshot read, and a library's version
///   changes with every commit that changes its albums (a re-created library continues its
///   numbers), so a count is never served for other contents than it was computed on. Old
///   versions' counts are never asked for again and leave by the bound below.
/// - Identical concurrent counts share one computation (the request model's single flight);
///   a failed one is not kept.
/// - Bounded by entries and by cost (the filter's text plus a fixed overhead), least recently
///   used first, like the page cache.
public final class FilterCounts: Sendable {
    struct Key: Hashable, Sendable {
        var library: LibraryID
        var version: Int64
        var filter: CombinedFilter
    }

    public typealias Limits = RequestModelCache<Int, Int>.Limits

    /// 4,096 counts, 4 MiB of keys at most; ages do not matter (the version is in the key).
    public static let defaultLimits = Limits(maxEntries: 4096, maxCost: 4 << 20, maxAge: .seconds(3600))

    private let cache: RequestModelCache<Key, Int>

    public init(limits: Limits = FilterCounts.defaultLimits, clock: any MonotonicClock = SystemClock()) {
        cache = RequestModelCache(
            limits: .init(maxEntries: limits.maxEntries, maxCost: limits.maxCost, maxAge: limits.maxAge), clock: clock)
    }

    /// The number of albums of `library` at `version` that `filter` matches: from memory, or
    /// `compute` (run in the snapshot that read `version`).
    func count(library: LibraryID, version: Int64, filter: CombinedFilter, compute: () throws -> Int) throws -> Int {
        let key = Key(library: library, version: version, filter: filter)
        // The version is in the key: the cache's own version is constant, so a count is only
        // ever joined or served at exactly its version.
        return try cache.value(key, version: 0) {
            .init(value: try compute(), version: 0, cost: Self.cost(of: key))
        }
    }

    /// Counts computed from the store (not counting those answered from memory or joined).
    public var computed: Int { cache.loadCount }

    /// Counts answered from memory, and counts not in memory (computed or joined).
    public var statistics: (hits: Int, misses: Int) { cache.statistics }

    /// Counts held and their total cost in bytes.
    public var usage: (entries: Int, cost: Int) { cache.usage }

    private static func cost(of key: Key) -> Int {
        func length(_ filter: AlbumFilter?) -> Int {
            guard let filter else { return 0 }
            return (filter.text?.utf8.count ?? 0) + (filter.artist?.utf8.count ?? 0) + (filter.genre?.utf8.count ?? 0)
        }
        return 192 + key.library.rawValue.utf8.count + length(key.filter.store) + length(key.filter.remainder)
    }
}
