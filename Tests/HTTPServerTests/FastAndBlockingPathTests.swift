import Essentials
import Foundation
import Synchronization
import TestThreads
import Testing
@testable import HTTPServer

/// Routes with a fast path that may decline and a blocking path: the router hands back
/// `.response` or `.blocking` work, and middleware runs once per request either way.
@Suite(.ownThreads) struct FastAndBlockingPathTests {
    /// Counts its invocations and stamps each response with the count it saw.
    struct CountingMiddleware: HTTPMiddleware {
        let calls: Counter
        func handle(_ request: HTTPRequest, context: RequestContext, next: any HTTPResponder) throws -> HTTPReply {
            let call = calls.increment()
            return try next.respond(to: request, context: context).map { response in
                var response = response
                response.headers.add("X-Call", String(call))
                return response
            }
        }
    }

    final class Counter: Sendable {
        private let count = Atomic<Int>(0)
        @discardableResult func increment() -> Int { count.wrappingAdd(1, ordering: .relaxed).newValue }
        var value: Int { count.load(ordering: .relaxed) }
    }

    /// `/albums/{id}`: `cached` is answered by the fast path, anything else by the blocking
    /// one (which waits at `gate` for `gated`); `broken` fails there.
    static func albumRoute(into routes: inout RouterBuilder, gate: Gate? = nil) {
        routes.add(.get, "/albums/{id}", fast: { _, context in
            context.parameters["id"] == "cached" ? HTTPResponse(contentType: "text/plain", bytes: Array("fast".utf8)) : nil
        }, blocking: { _, context in
            if context.parameters["id"] == "gated" { gate?.pass() }
            if context.parameters["id"] == "broken" { throw HTTPError(.conflict, detail: "broken") }
            return HTTPResponse(contentType: "text/plain", bytes: Array("slow \(context.parameters["id"] ?? "")".utf8))
        })
    }

    func text(_ response: HTTPResponse) -> String? {
        if case let .bytes(bytes) = response.body { return String(decoding: bytes, as: UTF8.self) }
        return nil
    }

    func reply(_ router: Router, _ path: String) throws -> HTTPReply {
        let resolution = router.resolve(method: .get, path: path[...])
        return try resolution.responder.respond(
            to: HTTPRequest(method: .get, target: path),
            context: RequestContext(peerAddress: IPAddress("127.0.0.1")!, parameters: resolution.parameters))
    }

    @Test func theFastPathAnswersAtOnceAndADeclineBecomesBlockingWork() throws {
        let calls = Counter()
        var routes = RouterBuilder(middleware: [CountingMiddleware(calls: calls)])
        Self.albumRoute(into: &routes)
        let router = routes.build()

        guard case let .response(fast) = try reply(router, "/albums/cached") else {
            Issue.record("the fast path answers a cached album at once")
            return
        }
        #expect(text(fast) == "fast")
        #expect(fast.headers["X-Call"] == "1")
        #expect(calls.value == 1)

        guard case let .blocking(work) = try reply(router, "/albums/7") else {
            Issue.record("a declined fast path hands the request to the blocking path")
            return
        }
        #expect(calls.value == 2, "middleware ran once, before the blocking work")
        let slow = try work()
        #expect(text(slow) == "slow 7")
        #expect(slow.headers["X-Call"] == "2", "the blocking path's response went back through the same invocation")
        #expect(calls.value == 2, "running the blocking work does not run middleware again")

        // An error on the blocking path is rendered there, inside the middleware.
        let broken = try reply(router, "/albums/broken").resolve()
        #expect(broken.status.code == 409)
        #expect(broken.headers["X-Call"] == "3")
        #expect(calls.value == 3)
    }

    @Test func executionDecidesWhereAPlainHandlerRuns() throws {
        var routes = RouterBuilder()
        routes.add(.get, "/inline") { _, _ in HTTPResponse(status: .ok) }
        routes.add(.get, "/worker", options: .workerPool) { _, _ in HTTPResponse(status: .accepted) }
        routes.add(.get, "/worker-responder", options: .workerPool, ClosureResponder { _, _ in HTTPResponse(status: .created) })
        let router = routes.build()
        guard case .response = try reply(router, "/inline") else {
            Issue.record("an inline handler answers at once")
            return
        }
        guard case .blocking = try reply(router, "/worker"), case .blocking = try reply(router, "/worker-responder") else {
            Issue.record("a worker-pool handler is blocking work")
            return
        }
        #expect(try reply(router, "/worker").resolve().status.code == 202)
        #expect(try reply(router, "/worker-responder").resolve().status.code == 201)
    }

    @Test func overSocketsTheBlockingPathRunsOffTheLoopAndMiddlewareOnce() throws {
        let calls = Counter()
        let gate = Gate()
        let server = try TestServer(eventLoops: 1) { routes in
            routes.middleware = [CountingMiddleware(calls: calls)]
            Self.albumRoute(into: &routes, gate: gate)
        }
        defer { server.stop() }
        let waiting = try server.client()
        let other = try server.client()

        try waiting.send("GET /albums/gated HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(gate.waitForArrival(), "the blocking path runs")
        // The one event loop is free while the blocking path waits: it was handed to a worker.
        try other.send("GET /albums/cached HTTP/1.1\r\nHost: test\r\n\r\n")
        let fast = try other.readResponse()
        #expect(fast.text == "fast")
        #expect(fast.header("X-Call") == "2")
        gate.open()
        let slow = try waiting.readResponse()
        #expect(slow.status == 200)
        #expect(slow.text == "slow gated")
        #expect(slow.header("X-Call") == "1", "the response went back through the invocation that handed it off")
        #expect(calls.value == 2)

        try waiting.send("GET /albums/broken HTTP/1.1\r\nHost: test\r\n\r\n")
        let broken = try waiting.readResponse()
        #expect(broken.status == 409)
        #expect(broken.header("X-Call") == "3")
        #expect(calls.value == 3)
    }
}
