import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Requests that leave the event loop (a fast path that declines, a worker-pool route) pass
/// through the middleware once: one request id generated, one metrics count.
@Suite(.timeLimit(.minutes(2)), .ownThreads) struct MiddlewareOncePerRequestTests {
    /// The counter part of a generated id (`<prefix>-<counter>`, base 32 `0-9a-v`).
    static func counter(_ requestID: String?) throws -> Int {
        let id = try #require(requestID)
        let digits = try #require(id.split(separator: "-").last)
        return try #require(Int(digits, radix: 32), "\(id)")
    }

    @Test func slowPathRequestsGetOneRequestIDAndOneCount() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let port = app.port
        let created = try RawHTTPClient.request(
            port: port, method: "POST", path: "/albums", headers: ["Content-Type": "application/json"],
            body: Array(#"{"title": "Once", "artist": "Tester"}"#.utf8))
        #expect(created.status == 201)
        let id = try #require(try created.json()["id"] as? String)
        let before = try MetricsTests.scrape(port)

        // Slow (a miss read on the worker), fast (now cached), slow (a page read), worker route.
        let paths = ["/albums/\(id)", "/albums/\(id)", "/albums?limit=5", "/albums/\(id)/table"]
        var counters: [Int] = []
        for path in paths {
            let response = try RawHTTPClient.request(port: port, path: path)
            #expect(response.status == 200, "\(path)")
            counters.append(try Self.counter(response.header("X-Request-Id")))
        }
        // The ids were generated one after another: one per request, none for a second pass.
        #expect(zip(counters, counters.dropFirst()).allSatisfy { $1 == $0 + 1 }, "\(counters)")

        let after = try MetricsTests.scrape(port)
        func delta(_ route: String) -> Double {
            let (name, labels) = MetricsTests.requests(route, "GET", 200)
            return after.value(name, labels) - before.value(name, labels)
        }
        #expect(delta("/albums/{id}") == 2)
        #expect(delta("/albums") == 1)
        #expect(delta("/albums/{id}/table") == 1)
    }

    /// The passcode check that needs a hash moves the rest of the chain to the worker: the
    /// middleware outside it still ran once.
    @Test func aTokenCheckOnTheWorkerKeepsOneRequestIDAndOneCount() throws {
        let token = "correct-horse-battery-staple"
        let app = try TestApp.make { $0.token = AccessToken(token) }
        app.start()
        defer { app.shutdown() }
        let port = app.port
        let before = try MetricsTests.scrape(port)
        let path = "/albums/01ARZ3NDEKTSV4RRFFQ69G5FAV"
        // Wrong token: hashed on the worker (401). Right token after a failure: hashed too, then
        // the route (404). Right token again: decided from memory, then the route (404).
        let tokens = ["wrong-token", token, token]
        var counters: [Int] = []
        for (index, presented) in tokens.enumerated() {
            let response = try RawHTTPClient.request(port: port, method: "DELETE", path: path,
                                                     headers: ["Authorization": "Bearer \(presented)"])
            #expect(response.status == (index == 0 ? 401 : 404), "\(index): \(response.text)")
            counters.append(try Self.counter(response.header("X-Request-Id")))
        }
        #expect(zip(counters, counters.dropFirst()).allSatisfy { $1 == $0 + 1 }, "\(counters)")
        #expect(app.accessGuard.slowHashes == 2)

        let after = try MetricsTests.scrape(port)
        func delta(_ status: Int) -> Double {
            let (name, labels) = MetricsTests.requests("/albums/{id}", "DELETE", status)
            return after.value(name, labels) - before.value(name, labels)
        }
        #expect(delta(401) == 1)
        #expect(delta(404) == 2)
    }
}
