import Essentials
import TestThreads
import Testing
@testable import HTTPServer

/// The router on its own, without sockets.
@Suite(.ownThreads) struct RouterTests {
    static func tag(_ name: String) -> @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse {
        { _, _ in HTTPResponse(contentType: "text/plain", bytes: Array(name.utf8)) }
    }

    static func makeRouter() -> Router {
        var routes = RouterBuilder()
        routes.add(.get, "/", tag("root"))
        routes.add(.get, "/albums", tag("list"))
        routes.add(.post, "/albums", options: .workerPool, tag("create"))
        routes.add(.get, "/albums/new", tag("new"))
        routes.add(.get, "/albums/{id}", tag("album"))
        routes.add(.delete, "/albums/{id}", tag("delete"))
        routes.add(.get, "/albums/{id}/tracks/{track}", tag("track"))
        routes.add(.head, "/ping", tag("ping-head"))
        routes.add(.get, "/ping", tag("ping-get"))
        return routes.build()
    }

    func run(_ resolution: Router.Resolution, _ method: HTTPMethod = .get, _ target: String = "/") throws -> HTTPResponse {
        try resolution.responder.respond(
            to: HTTPRequest(method: method, target: target),
            context: RequestContext(peerAddress: IPAddress("127.0.0.1")!, parameters: resolution.parameters)).resolve()
    }

    func bodyText(_ response: HTTPResponse) -> String? {
        if case let .bytes(bytes) = response.body { return String(decoding: bytes, as: UTF8.self) }
        return nil
    }

    @Test func pathParametersArePercentDecoded() throws {
        let router = Self.makeRouter()
        let resolution = router.resolve(method: .get, path: "/albums/Abbey%20Road")
        #expect(resolution.pattern == "/albums/{id}")
        #expect(resolution.parameters == ["id": "Abbey Road"])
        #expect(bodyText(try run(resolution)) == "album")

        let nested = router.resolve(method: .get, path: "/albums/a%2Fb/tracks/%C3%A9t%C3%A9")
        #expect(nested.pattern == "/albums/{id}/tracks/{track}")
        #expect(nested.parameters == ["id": "a/b", "track": "été"])
    }

    @Test func badPercentEscapeIsNotFound() throws {
        let resolution = Self.makeRouter().resolve(method: .get, path: "/albums/%zz")
        #expect(resolution.pattern == nil)
        #expect(try run(resolution).status.code == 404)
    }

    @Test func literalBeatsParameter() throws {
        let router = Self.makeRouter()
        let literal = router.resolve(method: .get, path: "/albums/new")
        #expect(literal.pattern == "/albums/new")
        #expect(literal.parameters.isEmpty)
        #expect(bodyText(try run(literal)) == "new")
        let parameter = router.resolve(method: .get, path: "/albums/newer")
        #expect(parameter.pattern == "/albums/{id}")
        #expect(parameter.parameters == ["id": "newer"])
    }

    @Test func headFallsBackToGetUnlessItHasItsOwnRoute() throws {
        let router = Self.makeRouter()
        let head = router.resolve(method: .head, path: "/albums/7")
        #expect(head.pattern == "/albums/{id}")
        #expect(head.parameters == ["id": "7"])
        #expect(bodyText(try run(head, .head)) == "album")
        #expect(bodyText(try run(router.resolve(method: .head, path: "/ping"), .head)) == "ping-head")
        #expect(bodyText(try run(router.resolve(method: .get, path: "/ping"))) == "ping-get")
    }

    @Test func routeOptionsAreResolved() {
        let router = Self.makeRouter()
        #expect(router.resolve(method: .post, path: "/albums").options.execution == .workerPool)
        #expect(router.resolve(method: .get, path: "/albums").options.execution == .inline)
    }

    @Test func methodNotAllowedListsAllowedMethods() throws {
        let router = Self.makeRouter()
        let resolution = router.resolve(method: .put, path: "/albums/7")
        #expect(resolution.pattern == nil)
        let response = try run(resolution, .put, "/albums/7")
        #expect(response.status.code == 405)
        #expect(response.headers["Allow"] == "DELETE, GET, HEAD")
        #expect(response.headers["Content-Type"] == "application/problem+json")
    }

    @Test func unknownPathsAreNotFound() throws {
        let router = Self.makeRouter()
        for path in ["/nope", "/albums/7/extra", "/albums/7/tracks", "/albums/", "//", "//albums", "/albums//tracks/1", "*", "/Albums"] {
            let resolution = router.resolve(method: .get, path: path[...])
            #expect(resolution.pattern == nil, "\(path)")
            #expect(try run(resolution, .get, path).status.code == 404, "\(path)")
        }
        #expect(router.resolve(method: .get, path: "/").pattern == "/")
    }

    @Test func aTrailingSlashPatternIsItsOwnRoute() throws {
        var routes = RouterBuilder()
        routes.add(.get, "/app", Self.tag("redirect"))
        routes.add(.get, "/app/", Self.tag("index"))
        routes.add(.get, "/app/{file}", Self.tag("file"))
        let router = routes.build()
        #expect(router.resolve(method: .get, path: "/app").pattern == "/app")
        #expect(router.resolve(method: .get, path: "/app/").pattern == "/app/")
        #expect(bodyText(try run(router.resolve(method: .get, path: "/app/"))) == "index")
        let file = router.resolve(method: .get, path: "/app/main.js")
        #expect(file.pattern == "/app/{file}")
        #expect(file.parameters == ["file": "main.js"])
        for path in ["/app//", "/app/main.js/", "/app//main.js"] {
            #expect(router.resolve(method: .get, path: path[...]).pattern == nil, "\(path)")
        }
    }

    @Test func literalAndWalkedPathsResolveAlike() throws {
        // Literal-only paths take a shortcut; paths with parameters walk the tree.
        let router = Self.makeRouter()
        let cases: [(String, HTTPMethod, String?, [String: String])] = [
            ("/albums", .get, "/albums", [:]),
            ("/albums", .post, "/albums", [:]),
            ("/albums/new", .get, "/albums/new", [:]),
            ("/albums/new", .delete, nil, [:]),  // the literal wins: 405, as a walk would give
            ("/albums/7", .delete, "/albums/{id}", ["id": "7"]),
            ("/albums/7/tracks/9", .get, "/albums/{id}/tracks/{track}", ["id": "7", "track": "9"]),
            ("/ping", .head, "/ping", [:]),
        ]
        for (path, method, pattern, parameters) in cases {
            let resolution = router.resolve(method: method, path: path[...])
            #expect(resolution.pattern == pattern, "\(method) \(path)")
            #expect(resolution.parameters == parameters, "\(method) \(path)")
        }
    }

    @Test func routeTableListsEveryRoute() {
        let table = Self.makeRouter().routeTable.map { "\($0.method) \($0.pattern)" }
        #expect(table == [
            "GET /", "GET /albums", "POST /albums", "GET /albums/new", "GET /albums/{id}", "DELETE /albums/{id}",
            "GET /albums/{id}/tracks/{track}", "HEAD /ping", "GET /ping",
        ])
    }

    @Test func middlewareWrapsRoutesAnd404InOrder() throws {
        struct Tag: HTTPMiddleware {
            let name: String
            func handle(_ request: HTTPRequest, context: RequestContext, next: any HTTPResponder) throws -> HTTPReply {
                try next.respond(to: request, context: context).map { [name] response in
                    var response = response
                    response.headers.add("X-Trace", name)
                    return response
                }
            }
        }
        var routes = RouterBuilder(middleware: [Tag(name: "outer"), Tag(name: "inner")])
        routes.add(.get, "/x", Self.tag("x"))
        let router = routes.build()
        for path in ["/x", "/missing"] {
            let response = try run(router.resolve(method: .get, path: path[...]))
            #expect(response.headers.values(for: "X-Trace") == ["inner", "outer"])
        }
    }
}

