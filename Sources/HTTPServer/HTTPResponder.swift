/// Anything that answers a request. A responder runs on the connection's event loop, so it
/// must not block there: it answers at once (`.response`), or hands the server the part that
/// blocks (`.blocking`: an SQLite write, disk, curl, a slow hash), which runs on the worker pool.
///
/// Routes, the 404/405 answers and middleware chains are all responders; the router folds the
/// middleware around each route once, at build time (see ``RouterBuilder``).
public protocol HTTPResponder: Sendable {
    func respond(to request: HTTPRequest, context: RequestContext) throws -> HTTPReply
}

/// A responder's answer: the response now, or the blocking work that will produce it.
///
/// The fast path (`.response`) allocates nothing beyond the response itself. A middleware that
/// looks at responses handles both cases, and wraps `.blocking` work in work of its own, so
/// that it sees the response produced on the worker within the same invocation:
///
/// ```swift
/// switch try next.respond(to: request, context: context) {
/// case let .response(response): return .response(stamp(response))
/// case let .blocking(work): return .blocking { stamp(try work()) }
/// }
/// ```
public enum HTTPReply: Sendable {
    /// The response, produced without blocking.
    case response(HTTPResponse)
    /// Work that may block. The server runs it once, on its worker pool, and sends what it
    /// returns; an error it throws is rendered by the server's ``ErrorRenderer``.
    case blocking(@Sendable () throws -> HTTPResponse)

    /// The response: at once, or by running the blocking work on the calling thread, which
    /// must be one that may block (a worker thread, a test).
    public func resolve() throws -> HTTPResponse {
        switch self {
        case let .response(response): return response
        case let .blocking(work): return try work()
        }
    }

    /// The reply with `transform` applied to its response: now, or on the worker after the
    /// blocking work. (The closure is formed on every call; middleware on hot paths switch
    /// over the reply instead, so that the fast path forms none.)
    public func map(_ transform: @escaping @Sendable (HTTPResponse) throws -> HTTPResponse) rethrows -> HTTPReply {
        switch self {
        case let .response(response): return .response(try transform(response))
        case let .blocking(work): return .blocking { try transform(try work()) }
        }
    }
}

/// A responder made of a closure that answers without blocking.
public struct ClosureResponder: HTTPResponder {
    let body: @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse
    public init(_ body: @escaping @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse) {
        self.body = body
    }
    public func respond(to request: HTTPRequest, context: RequestContext) throws -> HTTPReply {
        .response(try body(request, context))
    }
}

/// A responder made of a closure that may block: it always runs on the worker pool.
public struct BlockingResponder: HTTPResponder {
    let body: @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse
    public init(_ body: @escaping @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse) {
        self.body = body
    }
    public func respond(to request: HTTPRequest, context: RequestContext) throws -> HTTPReply {
        .blocking { [body] in try body(request, context) }
    }
}

/// A route with two paths: `fast` runs on the event loop and answers what it can from memory
/// (a cached page, a 304), or declines with nil; then `blocking` runs on the worker pool and
/// answers whatever `fast` left (a cache miss that reads the database).
///
/// The blocking path starts over from the request: time passed while it was queued, so what
/// the fast path saw may have changed. Middleware runs once around the pair either way.
public struct FastOrBlockingResponder: HTTPResponder {
    let fast: @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse?
    let blocking: @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse

    public init(
        fast: @escaping @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse?,
        blocking: @escaping @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse
    ) {
        self.fast = fast
        self.blocking = blocking
    }

    public func respond(to request: HTTPRequest, context: RequestContext) throws -> HTTPReply {
        if let response = try fast(request, context) { return .response(response) }
        return .blocking { [blocking] in try blocking(request, context) }
    }
}

/// Runs any responder on the worker pool (routes registered with `execution: .workerPool`).
struct WorkerPoolResponder: HTTPResponder {
    let wrapped: any HTTPResponder

    func respond(to request: HTTPRequest, context: RequestContext) throws -> HTTPReply {
        .blocking { [wrapped] in try wrapped.respond(to: request, context: context).resolve() }
    }
}

/// A decorator around a responder (logging, auth, request ids, metrics): it sees the request
/// on its way in and the response on its way out, and may answer by itself. It runs once per
/// request, on the event loop: when the reply is `.blocking`, whatever it does with the
/// response goes into the work it returns (see ``HTTPReply``); what it must block for itself
/// (a slow hash) it returns as `.blocking` work, which may then call `next` and
/// ``HTTPReply/resolve()`` its reply on the worker.
public protocol HTTPMiddleware: Sendable {
    func handle(
        _ request: HTTPRequest, context: RequestContext, next: any HTTPResponder
    ) throws -> HTTPReply

    /// Whether it also wraps the answers the server makes itself, before a request reaches a
    /// route: a head refused by the ``HeadCheck`` (401, 429), a framing error (400, 413, 431,
    /// ...), a 408. Such middleware sees the request head (no body), and the answer as what
    /// `next` replies; it must not answer by itself there, nor block when `next` answers at
    /// once (the chain runs on the event loop). Middleware that observes or stamps responses
    /// (request id, access log, metrics, forwarded headers) says true; one that decides
    /// (authentication) keeps the default, false.
    var wrapsServerAnswers: Bool { get }
}

extension HTTPMiddleware {
    public var wrapsServerAnswers: Bool { false }
}

/// One middleware bound to the responder it wraps.
struct MiddlewareResponder: HTTPResponder {
    let middleware: any HTTPMiddleware
    let next: any HTTPResponder

    func respond(to request: HTTPRequest, context: RequestContext) throws -> HTTPReply {
        try middleware.handle(request, context: context, next: next)
    }
}

extension Array where Element == any HTTPMiddleware {
    /// Wraps `responder` so that the first middleware of the list is the outermost.
    func wrapping(_ responder: any HTTPResponder) -> any HTTPResponder {
        reversed().reduce(responder) { MiddlewareResponder(middleware: $1, next: $0) }
    }
}
