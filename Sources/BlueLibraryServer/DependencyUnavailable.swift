import Essentials
import HTTPServer
import Library

/// 503 with `Retry-After` for a request that failed because a dependency (the database) cannot
/// be reached or has no capacity (a full connection pool): the same request may succeed in a
/// moment, so it is never a 500. Whatever a request was doing when it happened (a facade call,
/// an idempotency record, a settings read, a token check), the error is recognised here.
enum DependencyUnavailable {
    /// The unavailable dependency behind `error`, looking through the wrappers a store error
    /// travels in (`LibraryError.storage`); nil for any other failure.
    static func cause(of error: any Error) -> (any UnavailableDependency)? {
        switch error {
        case let dependency as any UnavailableDependency:
            return dependency.isUnavailable ? dependency : nil
        case let error as LibraryError:
            if case let .storage(underlying) = error { return cause(of: underlying.error) }
            return nil
        default:
            return nil
        }
    }

    /// What a 503 for an unavailable database says, unless the caller knows more (a write with
    /// an `Idempotency-Key` that lost the database midway says so itself).
    static let detail = "The database cannot be reached right now, did not answer in time, or has no free connection. "
        + "Repeat a read after the seconds in Retry-After. A write that got this answer may or may not have been saved "
        + "(the connection can be lost after the commit): check before repeating it."

    /// The one problem response for an unavailable database (every route, `/readyz`, the
    /// idempotency guard): 503, type `urn:bluelibrary:problem:database-unavailable`,
    /// `Retry-After` from `dependency`, no internals.
    static func error(_ dependency: any UnavailableDependency, detail: String = Self.detail) -> HTTPError {
        HTTPError(
            .serviceUnavailable, detail: detail,
            type: "urn:bluelibrary:problem:database-unavailable", title: "Database unavailable",
            headers: ["Retry-After": String(max(1, dependency.retryAfterSeconds)), "Cache-Control": "no-store"])
    }
}
