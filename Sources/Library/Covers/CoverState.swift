import Foundation

/// What is known about one cover URL (the tutorial's spinner: loading, then an image).
public enum CoverState: Sendable, Equatable {
    /// A fetch is running and nothing is cached yet.
    case loading
    /// A copy is cached (it may be stale and under revalidation).
    case loaded(CachedCover)
    /// The last fetch failed at `at`; the failure is remembered briefly (negative cache).
    case failed(CoverError, at: Date)

    /// `loading`, `loaded` or `failed`, for representations.
    public var name: String {
        switch self {
        case .loading: "loading"
        case .loaded: "loaded"
        case .failed: "failed"
        }
    }
}
