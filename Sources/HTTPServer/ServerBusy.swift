/// The server refused to start a request's work for want of capacity: a full work queue, or
/// a client already at its limit of expensive reads in flight (see ``ReadAdmission``). Not the
/// request's fault, and worth repeating after `retryAfterSeconds`: the answer is 503 with
/// `Retry-After`, never 500.
///
/// The server renders it through ``ErrorRenderer/busy``, where an application gives it its own
/// problem types; the default is ``httpError``.
public struct ServerBusy: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        /// Every thread of the pool the work needs is busy and its queue is full.
        case queueFull(Pool)
        /// The client (its address, after a trusted proxy's word) already has `limit` expensive
        /// reads queued or running.
        case clientLimit(limit: Int)
    }

    /// The pool that refused work.
    public enum Pool: String, Sendable, Equatable {
        /// The read lane (``RouteOptions/expensiveRead``).
        case reads
        /// The worker pool of every other blocking handler (writes, disk, covers).
        case workers
    }

    public let reason: Reason
    /// Seconds a client should wait before it repeats the request.
    public let retryAfterSeconds: Int

    public init(_ reason: Reason, retryAfterSeconds: Int = 1) {
        self.reason = reason
        self.retryAfterSeconds = max(1, retryAfterSeconds)
    }

    public var description: String {
        switch reason {
        case let .queueFull(pool): "server busy: the \(pool.rawValue) queue is full"
        case let .clientLimit(limit): "server busy: the client has \(limit) expensive reads in flight"
        }
    }

    /// The plain answer (problem type `about:blank`): 503 with `Retry-After` and a detail that
    /// says what to do.
    public var httpError: HTTPError {
        HTTPError(.serviceUnavailable, detail: detail, headers: headers)
    }

    /// What to do, in a sentence.
    public var detail: String {
        switch reason {
        case .queueFull:
            "The server has as much work queued as it takes; repeat the request after the seconds in Retry-After."
        case let .clientLimit(limit):
            "This client already has \(limit) expensive reads (uncached lists) in flight, the most the server runs for "
                + "one address at a time; wait for their answers before sending more, or repeat this one after the "
                + "seconds in Retry-After."
        }
    }

    /// `Retry-After`, and `Cache-Control: no-store` (a refusal is not the resource).
    public var headers: HTTPHeaders {
        ["Retry-After": String(retryAfterSeconds), "Cache-Control": "no-store"]
    }
}
