/// Anything that answers a request. Responders run synchronously: on the connection's event
/// loop for routes marked `.inline`, or on a worker thread for `.workerPool` routes, so a
/// blocking call (SQLite write, disk, curl) must only happen in the latter.
public protocol HTTPResponder: Sendable {
    func respond(to request: HTTPRequest, context: RequestContext) throws -> HTTPResponse
}

/// A responder made of a closure.
public struct ClosureResponder: HTTPResponder {
    let body: @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse
    public init(_ body: @escaping @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse) {
        self.body = body
    }
    public func respond(to request: HTTPRequest, context: RequestContext) throws -> HTTPResponse {
        try body(request, context)
    }
}

/// A decorator around a responder (logging, auth, request ids, metrics): it sees the request
/// on its way in and the response on its way out, and may answer by itself.
public protocol HTTPMiddleware: Sendable {
    func handle(
        _ request: HTTPRequest, context: RequestContext, next: any HTTPResponder
    ) throws -> HTTPResponse
}

/// One middleware bound to the responder it wraps.
struct MiddlewareResponder: HTTPResponder {
    let middleware: any HTTPMiddleware
    let next: any HTTPResponder

    func respond(to request: HTTPRequest, context: RequestContext) throws -> HTTPResponse {
        try middleware.handle(request, context: context, next: next)
    }
}

extension Array where Element == any HTTPMiddleware {
    /// Wraps `responder` so that the first middleware of the list is the outermost.
    func wrapping(_ responder: any HTTPResponder) -> any HTTPResponder {
        reversed().reduce(responder) { MiddlewareResponder(middleware: $1, next: $0) }
    }
}
