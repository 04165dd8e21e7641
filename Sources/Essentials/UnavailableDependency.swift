/// An error meaning a dependency the request needs (the database) cannot be reached for now,
/// or has no capacity left (a full connection pool): the same request may succeed later. The
/// server answers such a failure 503 with `Retry-After`, never 500.
public protocol UnavailableDependency: Error {
    /// True when this particular error is such a failure (a type may throw both kinds).
    var isUnavailable: Bool { get }
    /// Seconds a client should wait before trying again.
    var retryAfterSeconds: Int { get }
}
