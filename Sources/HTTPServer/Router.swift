/// Routes requests by method and path pattern (`/albums/{id}/cover`) to responders.
///
/// Build it with ``RouterBuilder``; once built it is immutable and shared by every event loop.
/// Matching is a walk down a tree of path segments: a literal segment beats a parameter.
/// `HEAD` is answered by the `GET` route when no `HEAD` route exists (the server drops the body),
/// a path with no route for the method gives 405 with `Allow`, an unknown path 404.
public final class Router: Sendable {
    /// The outcome of looking a request up: always something to run, so that 404 and 405 pass
    /// through the same middleware (access log, request id) as every other response.
    public struct Resolution: Sendable {
        public let responder: any HTTPResponder
        public let parameters: [String: String]
        public let pattern: String?
        /// The route's position in ``routeTable`` (nil for 404 and 405): a key that needs no
        /// hashing, for per-route tables built at start (metrics).
        public let routeIndex: Int?
        public let options: RouteOptions
    }

    /// Every route as (method, pattern), for tests that keep the router and the spec in step.
    public let routeTable: [(method: HTTPMethod, pattern: String)]
    /// The read lane's admission, when a route is marked ``RouteOptions/expensiveRead``: the
    /// server runs its threads; its statistics are for metrics.
    public let readAdmission: ReadAdmission?

    private let root: RouteNode
    /// Paths made only of literal segments (`/albums`, `/healthz`) → their node: most requests
    /// resolve with one hash lookup and no splitting.
    private let literalPaths: [Substring: RouteNode]
    private let notFound: any HTTPResponder
    /// The middleware that wraps the server's own answers (``HTTPMiddleware/wrapsServerAnswers``),
    /// outermost first.
    private let serverAnswerMiddleware: [any HTTPMiddleware]

    init(root: RouteNode, routeTable: [(HTTPMethod, String)], middleware: [any HTTPMiddleware],
         errorRenderer: ErrorRenderer, readAdmission: ReadAdmission?) {
        self.root = root
        self.readAdmission = readAdmission
        self.serverAnswerMiddleware = middleware.filter(\.wrapsServerAnswers)
        self.routeTable = routeTable.map { (method: $0.0, pattern: $0.1) }
        var literalPaths: [Substring: RouteNode] = ["/": root]
        func collect(_ node: RouteNode, _ prefix: String) {
            for (segment, child) in node.literals {
                let path = prefix + "/" + segment
                literalPaths[Substring(path)] = child
                collect(child, path)
            }
        }
        collect(root, "")
        self.literalPaths = literalPaths
        self.notFound = middleware.wrapping(
            ErrorCatchingResponder(renderer: errorRenderer, wrapped: ClosureResponder { request, _ in
                throw HTTPError(.notFound, detail: "There is no resource at \(request.path). GET / lists what there is.")
            }))
    }

    /// `response`, an answer the server made itself (a refused head, a framing error, a
    /// timeout), as the middleware that wraps such answers sends it: with the request id, in
    /// the access log and the metrics like any other response. `request` is the head (no body),
    /// or a placeholder when not even a head was read. Runs on the event loop; the rare
    /// middleware that would still block is run to its end here, and one that throws leaves the
    /// answer as it was.
    public func serverAnswer(_ response: HTTPResponse, to request: HTTPRequest, context: RequestContext) -> HTTPResponse {
        guard !serverAnswerMiddleware.isEmpty else { return response }
        let chain = serverAnswerMiddleware.wrapping(ClosureResponder { _, _ in response })
        return (try? chain.respond(to: request, context: context).resolve()) ?? response
    }

    public func resolve(method: HTTPMethod, path: Substring) -> Resolution {
        // Walking the literals segment by segment ends on the same node (a literal beats a
        // parameter), so a literal-only path can skip the walk.
        if let node = literalPaths[path] { return resolution(node, method: method, parameters: [:]) }
        var node = root
        var parameters: [String: String] = [:]
        var rest = path.dropFirst()  // the leading "/"
        while true {
            let slash = rest.utf8.firstIndex(of: UInt8(ascii: "/"))
            let segment = rest[..<(slash ?? rest.endIndex)]
            if let next = node.literals[segment] {
                node = next
            } else if let param = node.parameter, !segment.isEmpty,
                let value = PercentDecoding.decode(segment)
            {
                parameters[param.name] = value
                node = param.node
            } else {
                return Resolution(responder: notFound, parameters: [:], pattern: nil, routeIndex: nil, options: .inline)
            }
            guard let slash else { break }
            rest = rest[rest.utf8.index(after: slash)...]
        }
        return resolution(node, method: method, parameters: parameters)
    }

    private func resolution(_ node: RouteNode, method: HTTPMethod, parameters: [String: String]) -> Resolution {
        if let route = node.route(for: method) ?? (method == .head ? node.route(for: .get) : nil) {
            return Resolution(
                responder: route.responder, parameters: parameters, pattern: route.pattern, routeIndex: route.index,
                options: route.options)
        }
        if node.routes.isEmpty {
            return Resolution(responder: notFound, parameters: [:], pattern: nil, routeIndex: nil, options: .inline)
        }
        return Resolution(responder: node.methodNotAllowed!, parameters: parameters, pattern: nil, routeIndex: nil, options: .inline)
    }
}

/// Turns errors thrown by handlers (on either path) into responses: an ``HTTPError`` becomes its problem
/// document, and so does an ``HTTPResponseError``'s problem; a ``ServerBusy`` (the server's own
/// refusal for want of capacity) becomes what `busy` makes of it, a 503; anything else (an
/// ``HTTPResponseError`` without a problem too) goes to `unhandled`, which logs it and answers
/// 500 without internals.
public struct ErrorRenderer: Sendable {
    public var unhandled: @Sendable (any Error, HTTPRequest, RequestContext) -> HTTPResponse
    /// The problem a ``ServerBusy`` refusal is answered with (an application names its problem
    /// types here); default: ``ServerBusy/httpError``.
    public var busy: @Sendable (ServerBusy) -> HTTPError

    public init(busy: @escaping @Sendable (ServerBusy) -> HTTPError = { $0.httpError },
                unhandled: @escaping @Sendable (any Error, HTTPRequest, RequestContext) -> HTTPResponse) {
        self.unhandled = unhandled
        self.busy = busy
    }

    public static let standard = ErrorRenderer { _, _, _ in
        HTTPError(.internalServerError, detail: "The server failed to answer this request.").response()
    }

    func render(_ error: any Error, request: HTTPRequest, context: RequestContext) -> HTTPResponse {
        if let error = error as? HTTPError { return error.response() }
        if let error = error as? any HTTPResponseError, let problem = error.problem { return problem.response() }
        if let refusal = error as? ServerBusy { return busy(refusal).response() }
        return unhandled(error, request, context)
    }
}

struct ErrorCatchingResponder: HTTPResponder {
    let renderer: ErrorRenderer
    let wrapped: any HTTPResponder

    func respond(to request: HTTPRequest, context: RequestContext) -> HTTPReply {
        do {
            switch try wrapped.respond(to: request, context: context) {
            case let .response(response):
                return .response(response)
            case let .blocking(work):
                return .blocking { [renderer] in
                    do {
                        return try work()
                    } catch {
                        return renderer.render(error, request: request, context: context)
                    }
                }
            }
        } catch {
            return .response(renderer.render(error, request: request, context: context))
        }
    }
}

final class RouteNode: Sendable {
    struct Route: Sendable {
        let method: HTTPMethod
        let pattern: String
        /// Position in the router's route table.
        let index: Int
        let options: RouteOptions
        let responder: any HTTPResponder
    }
    struct Parameter: Sendable {
        let name: String
        let node: RouteNode
    }

    let literals: [Substring: RouteNode]
    let parameter: Parameter?
    /// A node has a handful of methods at most: a scan comparing their (small) names costs
    /// less than hashing the request's method.
    let routes: [Route]
    let methodNotAllowed: (any HTTPResponder)?

    init(literals: [Substring: RouteNode], parameter: Parameter?, routes: [Route],
         methodNotAllowed: (any HTTPResponder)?) {
        self.literals = literals
        self.parameter = parameter
        self.routes = routes
        self.methodNotAllowed = methodNotAllowed
    }

    func route(for method: HTTPMethod) -> Route? {
        for route in routes where route.method == method { return route }
        return nil
    }
}
