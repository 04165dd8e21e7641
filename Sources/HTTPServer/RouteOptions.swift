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

    public init(execution: Execution = .inline, maxBodyBytes: Int? = nil, streamsBody: Bool = false,
                bodyStreamWindow: Int = 1 << 20, expensiveRead: Bool = false) {
        self.execution = execution
        self.maxBodyBytes = maxBodyBytes
        self.streamsBody = streamsBody
        self.bodyStreamWindow = bodyStreamWindow
        self.expensiveRead = expensiveRead
    }

    public static let inline = RouteOptions(execution: .inline)
    public static let workerPool = RouteOptions(execution: .workerPool)
    /// A route with a fast path whose blocking path is an expensive read (see ``expensiveRead``).
    public static let expensiveRead = RouteOptions(execution: .inline, expensiveRead: true)
}
