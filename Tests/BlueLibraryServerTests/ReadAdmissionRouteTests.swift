import BlueLibraryTestSupport
import Dispatch
import Essentials
import Foundation
import Synchronization
import HTTPServer
import HTTPTestSupport
import Library
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Admission control on the real app: uncached list reads run in the read lane, bounded in
/// threads, queue and per client address; past those bounds, and when a read waits for a
/// SQLite reader past its deadline, the answer is 503 with `Retry-After` and a named problem
/// type, never 500. The SQLite readers are held by the test through the app's own
/// store (a read transaction that waits for the test), so what is in flight is known without
/// timing: the list reads wait for a reader until the test lets them go.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct ReadAdmissionRouteTests {
    /// Holds every reader connection of `app`'s SQLite store until `release()`.
    final class ReaderHold: Sendable {
        private let held = DispatchSemaphore(value: 0)
        private let letGo = DispatchSemaphore(value: 0)
        private let done = DispatchSemaphore(value: 0)
        private let released = Atomic<Bool>(false)
        let count: Int

        init(_ app: BlueLibraryApp, readers count: Int = 4) {
            self.count = count
            for _ in 0..<count {
                Thread.detachNewThread { [held, letGo, done] in
                    _ = try? app.backend.albums.read(.default) { _ in
                        held.signal()
                        _ = letGo.wait(timeout: .now() + 60)
                    }
                    done.signal()
                }
            }
        }

        /// True once every reader is held.
        func waitUntilHeld() -> Bool {
            (0..<count).allSatisfy { _ in held.wait(timeout: .now() + 10) == .success }
        }

        /// Lets the readers go and waits for the holders to end (once; later calls do nothing).
        func release() {
            guard !released.exchange(true, ordering: .relaxed) else { return }
            for _ in 0..<count { letGo.signal() }
            for _ in 0..<count { _ = done.wait(timeout: .now() + 10) }
        }
    }

    /// Sends `GET path` (with `headers`) on a connection of its own and returns it unread.
    static func send(_ app: BlueLibraryApp, _ path: String, headers: [String: String] = [:]) throws -> RawHTTPClient {
        let client = try RawHTTPClient(port: app.port, receiveTimeout: 30)
        var head = "GET \(path) HTTP/1.1\r\nHost: test\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        try client.send(head + "\r\n")
        return client
    }

    /// A 503 problem of `type` with `Retry-After`.
    static func expectRefused(_ response: RawHTTPClient.Response, type: String) throws {
        #expect(response.status == 503, "\(response.statusLine) \(response.text)")
        #expect(Int(response.header("Retry-After") ?? "") ?? 0 >= 1, "Retry-After: \(response.header("Retry-After") ?? "none")")
        #expect(response.header("Content-Type") == "application/problem+json")
        let problem = try response.json()
        #expect(problem["type"] as? String == type, "\(problem)")
        #expect(problem["status"] as? Int == 503)
        #expect((problem["detail"] as? String)?.contains("Retry-After") == true, "\(problem)")
    }

    static func metrics(_ app: BlueLibraryApp) throws -> String {
        try RawHTTPClient.request(port: app.port, path: "/metrics").text
    }

    /// The value of the sample `name` (no labels) in `/metrics`.
    static func metric(_ app: BlueLibraryApp, _ name: String) throws -> Int? {
        try metrics(app).split(separator: "\n").first { $0.hasPrefix(name + " ") }
            .flatMap { Int($0.dropFirst(name.count + 1)) }
    }

    @Test func aGreedyClientGets503TooManyReadsWhileAnotherAddressIsServed() throws {
        let app = try TestApp.make { config in
            config.trustedProxies = [IPAddressRange("127.0.0.1/32")!]
            config.maxReadsPerClient = 2
            config.readWorkers = 3
            config.readQueue = 8
            config.readerWait = .seconds(60)
        }
        app.start()
        defer { app.shutdown() }
        let lane = try #require(app.router.readAdmission)
        let hold = ReaderHold(app)
        #expect(hold.waitUntilHeld())
        defer { hold.release() }

        // Two clients behind the trusted proxy, told apart by X-Forwarded-For.
        let greedy = ["X-Forwarded-For": "203.0.113.7"]
        let first = try Self.send(app, "/albums?sort=title&offset=5000&nc=1", headers: greedy)
        let second = try Self.send(app, "/albums?sort=title&offset=5000&nc=2", headers: greedy)
        #expect(eventually { lane.statistics.inFlight == 2 })

        let third = try Self.send(app, "/albums?sort=title&offset=5000&nc=3", headers: greedy)
        try Self.expectRefused(try third.readResponse(), type: "urn:bluelibrary:problem:too-many-reads")

        let other = try Self.send(app, "/albums?sort=title&offset=5000&nc=4", headers: ["X-Forwarded-For": "203.0.113.8"])
        #expect(eventually { lane.statistics.inFlight == 3 }, "the other address is admitted")
        #expect(lane.statistics.refusedClientLimit == 1 && lane.statistics.refusedQueueFull == 0)

        hold.release()
        for client in [first, second, other] {
            let response = try client.readResponse()
            #expect(response.status == 200, "\(response.text)")
        }
        #expect(try Self.metrics(app).contains(#"bluelibrary_read_lane_refused_total{reason="client-limit"} 1"#))
        #expect(lane.statistics.inFlight == 0)
    }

    @Test func aFullReadLaneIs503ServerBusyWhileHealthChecksCachedReadsAndWritesAreAnswered() throws {
        let app = try TestApp.make { config in
            config.readWorkers = 1
            config.readQueue = 1
            config.maxReadsPerClient = 0
            config.readerWait = .seconds(60)
        }
        app.start()
        defer { app.shutdown() }
        let lane = try #require(app.router.readAdmission)
        // A page read once is cached: answered on the event loop from then on.
        #expect(try RawHTTPClient.request(port: app.port, path: "/albums?limit=2").status == 200)
        let hold = ReaderHold(app)
        #expect(hold.waitUntilHeld())
        defer { hold.release() }

        // The lane's one thread waits for a reader, and the one place in its queue is taken.
        let running = try Self.send(app, "/albums?sort=title&offset=5000&nc=1")
        let waiting = try Self.send(app, "/albums?sort=artist&count=true&nc=2")
        #expect(eventually { lane.statistics.inFlight == 2 && lane.statistics.running == 1 })

        let refused = try Self.send(app, "/albums?sort=-year&q=x&nc=3")
        try Self.expectRefused(try refused.readResponse(), type: "urn:bluelibrary:problem:server-busy")
        #expect(lane.statistics.refusedQueueFull == 1)

        // Nothing else waits behind the lane.
        #expect(try RawHTTPClient.request(port: app.port, path: "/healthz").status == 200)
        #expect(try RawHTTPClient.request(port: app.port, path: "/readyz").status == 200)
        let metrics = try Self.metrics(app)
        #expect(metrics.contains("bluelibrary_read_lane_in_flight 2"), "\(metrics)")
        #expect(metrics.contains(#"bluelibrary_read_lane_refused_total{reason="queue-full"} 1"#))
        #expect(try RawHTTPClient.request(port: app.port, path: "/albums?limit=2").status == 200)
        let added = try RawHTTPClient.request(
            port: app.port, method: "POST", path: "/albums", headers: ["Content-Type": "application/json"],
            body: Array(#"{"title":"While busy","artist":"Fair"}"#.utf8))
        #expect(added.status == 201, "\(added.text)")

        hold.release()
        #expect(try running.readResponse().status == 200)
        #expect(try waiting.readResponse().status == 200)
        #expect(eventually { lane.statistics.inFlight == 0 })
    }

    /// Cost classes: with the lane's one thread and its one queue place taken by expensive
    /// reads (held: they wait for a SQLite reader the test holds) and their address at its
    /// limit, a cheap-shaped uncached page from that very address (`limit=50`, read after a
    /// write moved the version) is not refused nor queued behind them: it runs on the workers
    /// and is answered 200, while an expensive-shaped one is refused 503. (Were every uncached
    /// list read sent to the lane, the cheap page would be refused along with the rest.)
    @Test func aCheapShapedPageIsServedOnTheWorkersWhileTheLaneIsFull() throws {
        let app = try TestApp.make { config in
            config.readWorkers = 1
            config.readQueue = 1
            config.maxReadsPerClient = 2
            config.readerWait = .seconds(60)
        }
        app.start()
        defer { app.shutdown() }
        let lane = try #require(app.router.readAdmission)
        let hold = ReaderHold(app)
        #expect(hold.waitUntilHeld())
        defer { hold.release() }
        let running = try Self.send(app, "/albums?sort=title&q=held&nc=1")
        let waiting = try Self.send(app, "/albums?count=true&genre=Rock&nc=2")
        #expect(eventually { lane.statistics.inFlight == 2 && lane.statistics.running == 1 })

        // A write moves the version (writes never wait for a reader): the page is not in memory.
        let added = try RawHTTPClient.request(
            port: app.port, method: "POST", path: "/albums", headers: ["Content-Type": "application/json"],
            body: Array(#"{"title":"Moves the version","artist":"Fair"}"#.utf8))
        #expect(added.status == 201, "\(added.text)")

        // An expensive shape from this address is refused ...
        let expensive = try Self.send(app, "/albums?limit=50&offset=5000")
        try Self.expectRefused(try expensive.readResponse(), type: "urn:bluelibrary:problem:too-many-reads")
        // ... the cheap ones are taken by the workers, not the lane.
        let cheap = try Self.send(app, "/albums?limit=50")
        let cheapSorted = try Self.send(app, "/albums?limit=50&sort=-createdAt&offset=100")
        #expect(lane.statistics.inFlight == 2, "cheap reads are not admitted into the lane")
        hold.release()
        let page = try cheap.readResponse()
        #expect(page.status == 200, "\(page.text)")
        #expect(try cheapSorted.readResponse().status == 200)
        #expect(try running.readResponse().status == 200)
        #expect(try waiting.readResponse().status == 200)
        #expect(lane.statistics.refusedClientLimit == 1 && lane.statistics.refusedQueueFull == 0)
    }

    @Test func aReadThatWaitsForAReaderPastItsDeadlineIs503() throws {
        let app = try TestApp.make { $0.readerWait = .milliseconds(100) }
        app.start()
        defer { app.shutdown() }
        let hold = ReaderHold(app)
        #expect(hold.waitUntilHeld())
        defer { hold.release() }

        let list = try Self.send(app, "/albums?sort=title&offset=5000&nc=1")
        try Self.expectRefused(try list.readResponse(), type: "urn:bluelibrary:problem:database-unavailable")
        // A read on the worker pool waits for the same readers: the same answer.
        let undo = try Self.send(app, "/undo")
        try Self.expectRefused(try undo.readResponse(), type: "urn:bluelibrary:problem:database-unavailable")
        #expect(try Self.metric(app, "bluelibrary_db_reader_timeouts_total") ?? 0 >= 2)

        hold.release()
        #expect(try RawHTTPClient.request(port: app.port, path: "/albums?sort=title&nc=1").status == 200)
    }
}
