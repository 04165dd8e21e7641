import Essentials
import Foundation
import HTTPTestSupport
import TestThreads
import Testing
@testable import HTTPServer

/// 404, 405 and errors thrown by handlers become problem documents.
@Suite(.ownThreads) struct ErrorResponseTests {
    struct DatabaseExploded: Error, CustomStringConvertible {
        var description: String { "SECRET-INTERNAL: table albums is corrupt at /var/lib/db" }
    }

    static func makeServer() throws -> TestServer {
        try TestServer { routes in
            routes.add(.get, "/thing") { _, _ in HTTPResponse(contentType: "text/plain", bytes: "thing".bytes) }
            routes.add(.put, "/thing") { _, _ in HTTPResponse() }
            routes.add(.delete, "/thing") { _, _ in HTTPResponse(status: .noContent) }
            routes.add(.get, "/boom") { _, _ in throw DatabaseExploded() }
            routes.add(.get, "/boom-worker", options: .workerPool) { _, _ in throw DatabaseExploded() }
            routes.add(.post, "/conflict") { _, _ in
                throw HTTPError(.conflict, detail: "An album with this title already exists.")
            }
        }
    }

    func fetch(_ request: String, isHead: Bool = false) throws -> RawHTTPClient.Response {
        let server = try Self.makeServer()
        defer { server.stop() }
        let client = try server.client()
        try client.send(request)
        let response = try client.readResponse(isHead: isHead)
        // None of these errors is a framing error: the connection stays usable.
        try client.send("GET /say?word=alive HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(try client.readResponse().text == "alive")
        return response
    }

    struct Refusal: HTTPResponseError {
        var problem: HTTPError?
    }

    /// An error of a lower layer that knows its problem is answered with it; one that says it
    /// has none (a failure of the server) goes to `unhandled`.
    @Test func anErrorThatKnowsItsProblemIsAnsweredWithItAndOneWithoutGoesToUnhandled() throws {
        let renderer = ErrorRenderer { _, _, _ in HTTPResponse(status: .internalServerError, headers: ["X-Unhandled": "yes"]) }
        let request = HTTPRequest(method: .get, target: "/thing")
        let context = RequestContext(peerAddress: try #require(IPAddress("127.0.0.1")))
        let refused = renderer.render(Refusal(problem: HTTPError(.conflict, detail: "That name is taken.")), request: request, context: context)
        #expect(refused.status == .conflict && refused.headers["X-Unhandled"] == nil)
        guard case let .bytes(body) = refused.body else { Issue.record("a problem document: \(refused.body)"); return }
        #expect(String(decoding: body, as: UTF8.self).contains("That name is taken."))
        let failed = renderer.render(Refusal(problem: nil), request: request, context: context)
        #expect(failed.status == .internalServerError && failed.headers["X-Unhandled"] == "yes")
    }

    @Test func unknownPathIs404Problem() throws {
        let response = try fetch("GET /no/such/thing HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(response.status == 404)
        #expect(response.header("Content-Type") == "application/problem+json")
        #expect(response.text.hasPrefix("{"))
        #expect(response.text.contains("\"status\":404"))
        #expect(response.text.contains("\"title\":\"Not Found\""))
    }

    @Test func wrongMethodIs405WithAllow() throws {
        let response = try fetch("POST /thing HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n\r\n")
        #expect(response.status == 405)
        #expect(response.header("Allow") == "DELETE, GET, HEAD, PUT")
        #expect(response.header("Content-Type") == "application/problem+json")
        #expect(response.text.contains("\"status\":405"))
    }

    @Test func headOnUnknownPathIs404WithoutBody() throws {
        let response = try fetch("HEAD /nowhere HTTP/1.1\r\nHost: test\r\n\r\n", isHead: true)
        #expect(response.status == 404)
        #expect(response.body.isEmpty)
    }

    @Test(arguments: ["/boom", "/boom-worker"])
    func unexpectedErrorIs500WithoutInternals(path: String) throws {
        let response = try fetch("GET \(path) HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(response.status == 500)
        #expect(response.header("Content-Type") == "application/problem+json")
        #expect(response.text.contains("\"status\":500"))
        #expect(!response.text.contains("SECRET"))
        #expect(!response.text.contains("DatabaseExploded"))
        #expect(!response.text.contains("/var/lib"))
    }

    @Test func httpErrorBecomesItsProblem() throws {
        let response = try fetch("POST /conflict HTTP/1.1\r\nHost: test\r\nContent-Length: 2\r\n\r\n{}")
        #expect(response.status == 409)
        #expect(response.header("Content-Type") == "application/problem+json")
        #expect(response.text.contains("\"detail\":\"An album with this title already exists.\""))
        #expect(response.text.contains("\"status\":409"))
    }

    @Test func customUnhandledRendererIsUsed() throws {
        var builder = RouterBuilder(errorRenderer: ErrorRenderer { _, request, _ in
            HTTPError(.serviceUnavailable, detail: "custom for \(request.path)").response()
        })
        builder.add(.get, "/boom") { _, _ in throw DatabaseExploded() }
        let router = builder.build()
        let resolution = router.resolve(method: .get, path: "/boom")
        let response = try resolution.responder.respond(
            to: HTTPRequest(method: .get, target: "/boom"), context: RequestContext(peerAddress: IPAddress("127.0.0.1")!)).resolve()
        #expect(response.status.code == 503)
    }
}
