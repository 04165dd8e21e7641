import Foundation
import Synchronization
import TestThreads
import Testing
@testable import HTTPServer

/// One connection cannot keep its event loop to itself: it gets a budget per wake-up and is
/// resumed after the other ready connections.
@Suite(.ownThreads) struct FairnessTests {
    /// The order in which the server handled requests.
    final class Journal: Sendable {
        private let entries = Mutex<[String]>([])
        func record(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    @Test func pipeliningClientIsInterleavedWithAnotherClient() throws {
        let gate = Gate()
        let journal = Journal()
        let pipelined = 1000
        let server = try TestServer(eventLoops: 1) { routes in
            // Inline, so it holds the event loop itself while the test lines up the input.
            routes.add(.get, "/hold") { _, _ in
                gate.pass()
                return HTTPResponse(contentType: "text/plain", bytes: [])
            }
            routes.add(.get, "/record") { request, _ in
                journal.record(request.query("who") ?? "")
                return HTTPResponse(contentType: "text/plain", bytes: Array((request.query("who") ?? "").utf8))
            }
        }
        defer { server.stop() }

        // Given the loop is held by a request of client A,
        let a = try server.client(timeout: 10)
        try a.send("GET /hold HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(gate.waitForArrival())
        // A has 1000 more requests pipelined behind it, and B one, all in the server's kernel.
        let many = String(repeating: "GET /record?who=a HTTP/1.1\r\nHost: test\r\n\r\n", count: pipelined)
        try a.send(many)
        let b = try server.client(timeout: 10)
        try b.send("GET /record?who=b HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(a.waitUntilAcknowledged())
        #expect(b.waitUntilAcknowledged())

        // When the loop is released
        gate.open()

        // Then B is answered, and was handled while most of A's requests were still waiting.
        #expect(try b.readResponse().text == "b")
        #expect(try a.readResponse().status == 200)
        for _ in 0..<pipelined { #expect(try a.readResponse().text == "a") }
        let order = journal.all
        #expect(order.count == pipelined + 1)
        let servedBeforeB = try #require(order.firstIndex(of: "b"))
        #expect(servedBeforeB < pipelined / 2, "B waited for \(servedBeforeB) of A's \(pipelined) requests")
    }
}
