/// The answer to ``CoverSource/cover(for:wait:)``.
public enum CoverResult: Sendable, Equatable {
    /// The cover, ready to be sent.
    case ready(CachedCover)
    /// The fetch is still running after the wait: answer 504 (or 202 with `Retry-After`).
    case loading
}
