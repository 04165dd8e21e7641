import Essentials
import Library

/// One upstream fetch of one URL, shared by everyone who asked for it while it ran
/// (coalescing): the first caller starts it, later callers wait on the same ``outcome``.
/// The service's registry keys flights by URL and compares them by identity.
final class CoverFlight: Sendable {
    let url: CoverURL
    /// The stale copy being revalidated; nil for a first fetch.
    let revalidating: CoverCacheRecord?
    /// Completed once by the service (`finish`), waited on by every caller.
    let outcome = SingleFlight<Result<CachedCover, CoverError>>()

    init(url: CoverURL, revalidating: CoverCacheRecord?) {
        self.url = url
        self.revalidating = revalidating
    }
}
