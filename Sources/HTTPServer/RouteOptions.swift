/// How a route runs and what it accepts.
public struct RouteOptions: Sendable {
    /// Where a route's handler runs. Middleware runs on the event loop either way, once per
    /// request. A route with a fast and a blocking path (``FastOrBlockingResponder``, or a
    /// responder that returns ``HTTPReply/blocking(_:)``) decides per request itself: give it
    /// `.inline`.
    public enum Execution: Sendable {
        /// On the connection's event loop: for handlers that never block (memory, tiny reads).
        case inline
        /// On the server's worker pool: for handlers that may block (database writes, disk, network).
        case workerPool
    }

    public var execution: Execution
    /// The largest request body this route takes; nil means the server's default limit.
    public var maxBodyBytes: Int?
    /// The responder starts once the head is read and pulls the body from
    /// `HTTPRequest.bodyStream` instead of getting it whole in `body`. Such a responder always
    /// runs on the worker pool (reading the stream blocks), whatever `execution` says. When
    /// the server rejects the body on its way (badly framed, over `maxBodyBytes`: 400, 413) or
    /// it stalls (408), the stream's read throws and the responder answers: it throws (or
    /// sends) `bodyStream.rejection`, so the answer goes through its middleware like any other.
    public var streamsBody: Bool
    /// With `streamsBody`: how many body bytes may wait for the responder before the server
    /// stops reading from the client.
    public var bodyStreamWindow: Int
    /// The route's blocking work is an expensive read (a database query whose cost the client
    /// chooses): it runs in the read lane, admitted by the router's ``ReadAdmission`` (a
    /// bounded pool and queue, a limit per client address; past them 503 with `Retry-After`),
    /// never on the workers that writes and other blocking handlers use. What the route
    /// answers on the event loop (its fast path) is not affected.
    public var expensiveRead: Bool
    /// With `expensiveRead`: tells, per request, whether its blocking work is expensive (true:
    /// the read lane) or bounded by its shape (false: the general workers, unadmitted, never
    /// queued behind the lane). It sees the request as received (method, target, headers) and
    /// runs on the event loop, so it must be cheap and must not block. Nil: every request of
    /// the route is expensive. The server knows nothing of what the route reads; the route
    /// decides (see ``isReadLaneWork(_:)``).
    public var isExpensive: (@Sendable (HTTPRequest) -> Bool)?

    public init(execution: Execution = .inline, maxBodyBytes: Int? = nil, streamsBody: Bool = false,
                bodyStreamWindow: Int = 1 << 20, expensiveRead: Bool = false,
                isExpensive: (@Sendable (HTTPRequest) -> Bool)? = nil) {
        self.execution = execution
        self.maxBodyBytes = maxBodyBytes
        self.streamsBody = streamsBody
        self.bodyStreamWindow = bodyStreamWindow
        self.expensiveRead = expensiveRead
        self.isExpensive = isExpensive
    }

    /// Whether `request`'s blocking work runs in the read lane: the route is an expensive read
    /// and its classifier (if any) says this request is.
    public func isReadLaneWork(_ request: HTTPRequest) -> Bool {
        guard expensiveRead else { return false }
        return isExpensive?(request) ?? true
    }

    public static let inline = RouteOptions(execution: .inline)
    public static let workerPool = RouteOptions(execution: .workerPool)
    /// A route with a fast path whose blocking path is an expensive read (see ``expensiveRead``).
    public static let expensiveRead = RouteOptions(execution: .inline, expensiveRead: true)

    /// A route with a fast path whose blocking path is an expensive read only for the requests
    /// `isExpensive` says so; the others (cheap shapes) run on the general workers.
    public static func expensiveRead(when isExpensive: @escaping @Sendable (HTTPRequest) -> Bool) -> RouteOptions {
        RouteOptions(execution: .inline, expensiveRead: true, isExpensive: isExpensive)
    }
}
