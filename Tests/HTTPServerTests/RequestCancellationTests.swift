import Essentials
import Foundation
import HTTPTestSupport
import Synchronization
import TestThreads
import Testing
@testable import HTTPServer

/// The cancellation signal a request's blocking work reads (`RequestContext.cancellation`): set
/// when the client closes its connection while the work runs, never for a client that waits.
@Suite(.ownThreads) struct RequestCancellationTests {
    /// What the `/wait` handler saw: whether it had a flag, and whether the flag was set before
    /// its deadline (10 s).
    final class Observed: Sendable {
        let started = Atomic<Int>(0)
        let cancelled = Atomic<Int>(0)
        let notCancelled = Atomic<Int>(0)
    }

    static func server(_ observed: Observed) throws -> TestServer {
        try TestServer { routes in
            routes.add(.get, "/wait", options: .workerPool) { _, context in
                observed.started.add(1, ordering: .relaxed)
                let flag = context.cancellation
                let deadline = ContinuousClock.now + .seconds(10)
                // Stands for a query that looks at its flag between steps.
                while ContinuousClock.now < deadline, flag?.isCancelled != true { usleep(500) }
                if flag?.isCancelled == true {
                    observed.cancelled.add(1, ordering: .relaxed)
                } else {
                    observed.notCancelled.add(1, ordering: .relaxed)
                }
                return HTTPResponse(contentType: "text/plain", bytes: Array("done".utf8))
            }
            routes.add(.get, "/quick", options: .workerPool) { _, context in
                let text = context.cancellation?.isCancelled == false ? "watched" : "unwatched"
                return HTTPResponse(contentType: "text/plain", bytes: Array(text.utf8))
            }
        }
    }

    @Test func aClientThatClosesWhileItsRequestRunsSetsTheFlag() throws {
        let observed = Observed()
        let server = try Self.server(observed)
        defer { server.stop() }
        do {
            let client = try server.client()
            try client.send("GET /wait HTTP/1.1\r\nHost: test\r\n\r\n")
            #expect(eventually { observed.started.load(ordering: .relaxed) == 1 })
        }  // the client closes here, while the handler runs
        #expect(eventually { observed.cancelled.load(ordering: .relaxed) == 1 }, "the handler saw the flag set")
        #expect(observed.notCancelled.load(ordering: .relaxed) == 0)
    }

    @Test func aClientThatClosesRightAfterSendingSetsTheFlagToo() throws {
        let observed = Observed()
        let server = try Self.server(observed)
        defer { server.stop() }
        do {
            let client = try server.client()
            try client.send("GET /wait HTTP/1.1\r\nHost: test\r\n\r\n")
        }  // sent and hung up at once: the hang-up may come with the request
        #expect(eventually { observed.cancelled.load(ordering: .relaxed) == 1 })
        #expect(observed.notCancelled.load(ordering: .relaxed) == 0)
    }

    @Test func aClientThatWaitsIsNotCancelled() throws {
        let observed = Observed()
        let server = try Self.server(observed)
        defer { server.stop() }
        let client = try server.client()
        for _ in 0..<3 {
            try client.send("GET /quick HTTP/1.1\r\nHost: test\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200 && response.text == "watched", "\(response.text)")
        }
    }
}
