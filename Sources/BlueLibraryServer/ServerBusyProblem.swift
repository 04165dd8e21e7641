import HTTPServer

/// The problems the server answers when it refuses work for want of capacity (``ServerBusy``):
/// always 503 with `Retry-After`, never 500, and a detail that says what to do.
///
/// - `urn:bluelibrary:problem:server-busy`: the read lane (uncached list reads) or the worker
///   queue is full; the same request may succeed after `Retry-After`.
/// - `urn:bluelibrary:problem:too-many-reads`: this client address already has
///   `--max-reads-per-client` uncached list reads running or waiting; it should wait for their
///   answers (or `Retry-After`) before sending more.
enum ServerBusyProblem {
    static let serverBusyType = "urn:bluelibrary:problem:server-busy"
    static let tooManyReadsType = "urn:bluelibrary:problem:too-many-reads"

    static func error(_ refusal: ServerBusy) -> HTTPError {
        switch refusal.reason {
        case .queueFull(.reads):
            return HTTPError(
                .serviceUnavailable,
                detail: "The server is running and queueing as many uncached list reads as it takes. Repeat the request after "
                    + "the seconds in Retry-After; a narrower query (a filter, a cursor instead of a deep offset) costs less. "
                    + "Cached pages, single albums and writes are not affected.",
                type: serverBusyType, title: "Server busy", headers: refusal.headers)
        case .queueFull(.workers):
            return HTTPError(
                .serviceUnavailable,
                detail: "The server has as much work queued as it takes. Repeat the request after the seconds in Retry-After "
                    + "(nothing was done: a write that got this answer was not made).",
                type: serverBusyType, title: "Server busy", headers: refusal.headers)
        case let .clientLimit(limit):
            return HTTPError(
                .serviceUnavailable,
                detail: "This client address already has \(limit) uncached list reads running or waiting, the most the server "
                    + "takes from one address at once. Wait for their answers before sending more, or repeat this one after "
                    + "the seconds in Retry-After. (Behind a proxy, the server tells its clients apart only when the proxy is "
                    + "in --trusted-proxies.)",
                type: tooManyReadsType, title: "Too many reads in flight", headers: refusal.headers)
        }
    }
}
