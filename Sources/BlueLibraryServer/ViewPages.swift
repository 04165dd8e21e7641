import Essentials
import Library
import Synchronization

/// The request model's state for view pages: the page cache, and which views the fast path
/// may answer from memory.
///
/// Rules:
/// - A view is "warm" once a page request for it ran on the worker pool: `viewVersion` there
///   loaded its definition and made every source's facade learn its version. The event-loop
///   fast path answers only warm views, and only through `Libraries.viewVersionInMemory`
///   (nil when the definitions were forgotten or a source's facade is not made), so it never
///   waits for the database: anything else goes to the worker pool.
/// - ``definitionsChanged()`` (a view created, changed or deleted) erases the cached pages and
///   cools every view: a re-created view may reuse an old revision number, and a changed one
///   may name sources whose facades are not made yet.
final class ViewPages: Sendable {
    typealias Cache = RequestModelCache<ViewListRoute.PageKey, ViewListRoute.CachedPage>

    let cache: Cache
    private let warm = Mutex<Set<ViewID>>([])

    init(clock: any MonotonicClock) {
        cache = Cache(clock: clock)
    }

    func isWarm(_ view: ViewID) -> Bool { warm.withLock { $0.contains(view) } }

    func warmed(_ view: ViewID) { _ = warm.withLock { $0.insert(view) } }

    func definitionsChanged() {
        warm.withLock { $0.removeAll() }
        cache.invalidate(erase: true)
    }
}

extension ViewPages {
    /// `bluelibrary_view_page_cache_{hits_total,misses_total,entries}`: the view page cache
    /// as the page cache metrics show `GET /albums`'s.
    func register(in metrics: Metrics) {
        metrics.sampled("bluelibrary_view_page_cache_hits_total",
                        help: "GET /views/{view}/albums requests answered from a cached page (200 with it, or 304 against its ETag).",
                        kind: .counter) { [cache] in cache.statistics.hits }
        metrics.sampled("bluelibrary_view_page_cache_misses_total",
                        help: "GET /views/{view}/albums pages read from the database (or joined to an identical read).",
                        kind: .counter) { [cache] in cache.statistics.misses }
        metrics.sampled("bluelibrary_view_page_cache_entries", help: "GET /views/{view}/albums pages held in memory.") { [cache] in
            cache.usage.entries
        }
    }
}
