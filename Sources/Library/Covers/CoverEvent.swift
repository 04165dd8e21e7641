/// A finished cover fetch (the tutorial's `BLDownloadImageNotification`), for the events feed.
public enum CoverEvent: Sendable, Equatable {
    /// A cover was fetched, or revalidated (same `etag`) or replaced (new `etag`).
    case loaded(url: String, cover: CachedCover)
    /// A fetch of an uncached cover failed. A failed revalidation publishes nothing: the stale
    /// copy is still served.
    case failed(url: String, error: CoverError)

    /// The event name: `cover.loaded` or `cover.failed`.
    public var name: String {
        switch self {
        case .loaded: "cover.loaded"
        case .failed: "cover.failed"
        }
    }

    public var url: String {
        switch self {
        case .loaded(let url, _), .failed(let url, _): url
        }
    }
}

/// Where cover events go. Called on a fetch thread after the cache is updated:
/// implementations must return quickly and must not wait for a cover synchronously.
public protocol CoverEventSink: Sendable {
    func publish(_ event: CoverEvent)
}
