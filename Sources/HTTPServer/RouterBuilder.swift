/// Collects routes and middleware, then builds an immutable ``Router``.
///
/// Middleware given to the builder wraps every route and the 404/405 answers; it is folded
/// around each responder once, in `build()`, so nothing is looked up per request. The first
/// middleware in the list is the outermost.
public struct RouterBuilder {
    private struct PendingRoute {
        let method: HTTPMethod
        let pattern: String
        let options: RouteOptions
        let responder: any HTTPResponder
    }

    private var routes: [PendingRoute] = []
    public var middleware: [any HTTPMiddleware]
    public var errorRenderer: ErrorRenderer
    /// The read lane's bounds, for routes marked ``RouteOptions/expensiveRead`` (the router
    /// makes their ``ReadAdmission`` in `build()`; without such routes there is none).
    public var readLimits = ReadAdmission.Limits()

    public init(middleware: [any HTTPMiddleware] = [], errorRenderer: ErrorRenderer = .standard) {
        self.middleware = middleware
        self.errorRenderer = errorRenderer
    }

    /// Adds a route. Patterns are absolute paths whose segments are literals or `{name}`; a
    /// pattern may end in `/` (`/app/`, a directory's own address, distinct from `/app`).
    /// Registering the same method and pattern twice is a programming error.
    ///
    /// With `options.execution == .workerPool` (or `streamsBody`) the responder is called on
    /// the worker pool; otherwise on the event loop, where it answers or returns the part
    /// that blocks as ``HTTPReply/blocking(_:)``.
    public mutating func add(
        _ method: HTTPMethod, _ pattern: String, options: RouteOptions = .inline, _ responder: any HTTPResponder
    ) {
        precondition(pattern.hasPrefix("/"), "route patterns start with /: \(pattern)")
        precondition(pattern == "/" || !Self.segments(of: pattern).dropLast().contains(""), "empty segment in route pattern \(pattern)")
        precondition(
            !routes.contains { $0.method == method && $0.pattern == pattern }, "duplicate route \(method) \(pattern)")
        let runsOnWorkers = options.execution == .workerPool || options.streamsBody
        let responder = runsOnWorkers && !(responder is BlockingResponder) ? WorkerPoolResponder(wrapped: responder) : responder
        routes.append(PendingRoute(method: method, pattern: pattern, options: options, responder: responder))
    }

    /// Adds a route answered by `handler`: on the event loop (`.inline`) or on the worker
    /// pool (`.workerPool`, and always for `streamsBody`, whose body is read by blocking calls).
    public mutating func add(
        _ method: HTTPMethod, _ pattern: String, options: RouteOptions = .inline,
        _ handler: @escaping @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse
    ) {
        let runsOnWorkers = options.execution == .workerPool || options.streamsBody
        add(method, pattern, options: options,
            runsOnWorkers ? BlockingResponder(handler) as any HTTPResponder : ClosureResponder(handler))
    }

    /// Adds a route with two paths (``FastOrBlockingResponder``): `fast` answers on the event
    /// loop what it can without blocking, or declines with nil; `blocking` then answers on the
    /// worker pool. Middleware runs once per request either way.
    public mutating func add(
        _ method: HTTPMethod, _ pattern: String, options: RouteOptions = .inline,
        fast: @escaping @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse?,
        blocking: @escaping @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse
    ) {
        precondition(options.execution == .inline && !options.streamsBody,
                     "a route with a fast path runs it inline: \(method) \(pattern)")
        add(method, pattern, options: options, FastOrBlockingResponder(fast: fast, blocking: blocking))
    }

    /// Every route added so far as (method, pattern), in order.
    public var routeTable: [(method: HTTPMethod, pattern: String)] { routes.map { ($0.method, $0.pattern) } }

    public func build() -> Router {
        let admission = routes.contains { $0.options.expensiveRead } ? ReadAdmission(limits: readLimits) : nil
        let tree = MutableNode()
        for (index, route) in routes.enumerated() {
            var node = tree
            for segment in Self.segments(of: route.pattern) {
                if segment.hasPrefix("{") && segment.hasSuffix("}") {
                    let name = String(segment.dropFirst().dropLast())
                    if let existing = node.parameter {
                        precondition(existing.name == name, "conflicting parameter names at \(route.pattern)")
                        node = existing.node
                    } else {
                        let child = MutableNode()
                        node.parameter = (name, child)
                        node = child
                    }
                } else {
                    let child = node.literals[segment] ?? MutableNode()
                    node.literals[segment] = child
                    node = child
                }
            }
            node.routes[route.method] = (index, route)
        }
        return Router(
            root: freeze(tree, admission: admission), routeTable: routeTable, middleware: middleware,
            errorRenderer: errorRenderer, readAdmission: admission)
    }

    private func freeze(_ node: MutableNode, admission: ReadAdmission?) -> RouteNode {
        var frozenRoutes: [RouteNode.Route] = []
        for (index, route) in node.routes.values.sorted(by: { $0.index < $1.index }) {
            // Admission runs inside the middleware (so it sees the client address a trusted
            // proxy gave, and its refusal is logged and counted like any answer).
            var responder = route.responder
            if route.options.expensiveRead, let admission {
                responder = AdmissionResponder(admission: admission, options: route.options, wrapped: responder)
            }
            frozenRoutes.append(RouteNode.Route(
                method: route.method, pattern: route.pattern, index: index, options: route.options,
                responder: middleware.wrapping(ErrorCatchingResponder(renderer: errorRenderer, wrapped: responder))))
        }
        var methodNotAllowed: (any HTTPResponder)?
        if !node.routes.isEmpty {
            var allowed = Set(node.routes.keys.map(\.rawValue))
            if allowed.contains("GET") { allowed.insert("HEAD") }
            let allow = allowed.sorted().joined(separator: ", ")
            methodNotAllowed = middleware.wrapping(
                ErrorCatchingResponder(renderer: errorRenderer, wrapped: ClosureResponder { request, _ in
                    throw HTTPError(
                        .methodNotAllowed, detail: "\(request.method) is not allowed here. Allowed: \(allow).",
                        headers: ["Allow": allow])
                }))
        }
        return RouteNode(
            literals: Dictionary(uniqueKeysWithValues: node.literals.map { (Substring($0.key), freeze($0.value, admission: admission)) }),
            parameter: node.parameter.map { RouteNode.Parameter(name: $0.name, node: freeze($0.node, admission: admission)) },
            routes: frozenRoutes, methodNotAllowed: methodNotAllowed)
    }

    static func segments(of pattern: String) -> [String] {
        pattern == "/" ? [] : pattern.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
    }

    private final class MutableNode {
        var literals: [String: MutableNode] = [:]
        var parameter: (name: String, node: MutableNode)?
        var routes: [HTTPMethod: (index: Int, route: PendingRoute)] = [:]
    }
}
