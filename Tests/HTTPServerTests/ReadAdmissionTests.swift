import Essentials
import Foundation
import HTTPTestSupport
import TestThreads
import Testing
@testable import HTTPServer

/// Admission control: the blocking work of routes marked `.expensiveRead` runs in a read lane
/// of its own (bounded threads and queue, a limit per client address), refused with 503 and
/// `Retry-After` past its bounds; the worker pool's queue is bounded too. The handlers wait at
/// a ``Gate`` the test opens, so what is in flight is known without timing.
@Suite(.ownThreads) struct ReadAdmissionTests {
    /// `GET /list/{id}`: `cached` answered by the fast path; anything else read on the blocking
    /// path, which waits at `gate` unless the id is `free`. `POST /write` runs on the workers.
    static func routes(_ routes: inout RouterBuilder, gate: Gate, limits: ReadAdmission.Limits) {
        routes.readLimits = limits
        routes.add(.get, "/list/{id}", options: .expensiveRead, fast: { _, context in
            context.parameters["id"] == "cached" ? HTTPResponse(contentType: "text/plain", bytes: Array("cached".utf8)) : nil
        }, blocking: { _, context in
            let id = context.parameters["id"] ?? ""
            if id != "free" { gate.pass() }
            return HTTPResponse(contentType: "text/plain", bytes: Array("read \(id)".utf8))
        })
        routes.add(.post, "/write", options: .workerPool) { _, _ in
            HTTPResponse(status: .created, contentType: "text/plain", bytes: Array("written".utf8))
        }
    }

    static func get(_ path: String) -> String { "GET \(path) HTTP/1.1\r\nHost: test\r\n\r\n" }

    /// A 503 problem with `Retry-After`, and what its body says.
    static func expectBusy(_ response: RawHTTPClient.Response, type: String = "about:blank") throws {
        #expect(response.status == 503, "\(response.statusLine) \(response.text)")
        #expect(response.header("Retry-After") == "1")
        #expect(response.header("Content-Type") == "application/problem+json")
        let problem = try response.json()
        #expect(problem["type"] as? String == type)
        #expect(problem["status"] as? Int == 503)
        #expect((problem["detail"] as? String)?.contains("Retry-After") == true, "\(problem)")
    }

    @Test func aClientOverItsLimitIs503WhileAnotherAddressIsServed() throws {
        let gate = Gate()
        let server = try TestServer(workerThreads: 1) { routes in
            Self.routes(&routes, gate: gate, limits: .init(threads: 3, queue: 0, perClient: 2))
        }
        defer { server.stop() }
        // The greedy client (127.0.0.1) has two reads running, held at the gate.
        let first = try server.client(), second = try server.client()
        try first.send(Self.get("/list/a"))
        #expect(gate.waitForArrival())
        try second.send(Self.get("/list/b"))
        #expect(gate.waitForArrival())

        let third = try server.client()
        try third.send(Self.get("/list/c"))
        try Self.expectBusy(try third.readResponse())
        #expect(server.router.readAdmission?.statistics.refusedClientLimit == 1)
        // Its cached reads are answered on the event loop as ever.
        try third.send(Self.get("/list/cached"))
        #expect(try third.readResponse().text == "cached")

        // Another address is admitted and served on the lane's third thread meanwhile.
        let other = try server.client(source: "127.0.0.2")
        try other.send(Self.get("/list/free"))
        let served = try other.readResponse()
        #expect(served.status == 200 && served.text == "read free")

        gate.open()
        gate.open()
        #expect(try first.readResponse().text == "read a")
        #expect(try second.readResponse().text == "read b")
        // Answered: the client is under its limit again.
        try third.send(Self.get("/list/free"))
        #expect(try third.readResponse().text == "read free")
        #expect(server.router.readAdmission?.statistics.inFlight == 0)
    }

    @Test func aFullReadLaneIs503AndWritesHealthAndCachedReadsAreAnswered() throws {
        let gate = Gate()
        let server = try TestServer(workerThreads: 1) { routes in
            Self.routes(&routes, gate: gate, limits: .init(threads: 1, queue: 1, perClient: 0))
        }
        defer { server.stop() }
        let lane = try #require(server.router.readAdmission)
        // One read runs (at the gate), one waits for the lane's thread.
        let running = try server.client(), waiting = try server.client()
        try running.send(Self.get("/list/a"))
        #expect(gate.waitForArrival())
        try waiting.send(Self.get("/list/b"))
        #expect(eventually { lane.statistics.inFlight == 2 })

        let refused = try server.client()
        try refused.send(Self.get("/list/c"))
        try Self.expectBusy(try refused.readResponse())
        #expect(lane.statistics.refusedQueueFull == 1)

        // Nothing else waits behind the lane: an inline route, a write on the worker pool and a
        // cached read are answered while it is full.
        let other = try server.client()
        try other.send(Self.get("/hello"))
        #expect(try other.readResponse().status == 200)
        try other.send("POST /write HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n\r\n")
        let written = try other.readResponse()
        #expect(written.status == 201 && written.text == "written")
        try other.send(Self.get("/list/cached"))
        #expect(try other.readResponse().text == "cached")

        gate.open()
        #expect(try running.readResponse().text == "read a")
        #expect(gate.waitForArrival())
        gate.open()
        #expect(try waiting.readResponse().text == "read b")
        #expect(eventually { lane.statistics.inFlight == 0 && lane.statistics.running == 0 })
    }

    @Test func aFullWorkerQueueIs503ThroughTheServerAnswerMiddleware() throws {
        struct Stamp: HTTPMiddleware {
            var wrapsServerAnswers: Bool { true }
            func handle(_ request: HTTPRequest, context: RequestContext, next: any HTTPResponder) throws -> HTTPReply {
                try next.respond(to: request, context: context).map { response in
                    var response = response
                    response.headers.set("X-Stamped", "yes")
                    return response
                }
            }
        }
        let gate = Gate()
        let server = try TestServer(workerThreads: 1, workerQueueLimit: 1) { routes in
            routes.middleware = [Stamp()]
            routes.add(.get, "/slow", options: .workerPool) { _, _ in
                gate.pass()
                return HTTPResponse(contentType: "text/plain", bytes: Array("slow".utf8))
            }
        }
        defer { server.stop() }
        let running = try server.client(), waiting = try server.client()
        try running.send(Self.get("/slow"))
        #expect(gate.waitForArrival())
        try waiting.send(Self.get("/slow"))
        #expect(eventually { server.server.workerQueue.waiting == 1 })

        let refused = try server.client()
        try refused.send(Self.get("/slow"))
        let response = try refused.readResponse()
        try Self.expectBusy(response)
        #expect(response.header("X-Stamped") == "yes", "the refusal passes the middleware that wraps server answers")
        #expect(server.server.workerQueue.refused == 1)
        // The connection stays usable.
        try refused.send(Self.get("/hello"))
        #expect(try refused.readResponse().status == 200)

        gate.open()
        #expect(try running.readResponse().text == "slow")
        #expect(gate.waitForArrival())
        gate.open()
        #expect(try waiting.readResponse().text == "slow")
    }

    @Test func anApplicationNamesItsBusyProblemAndTheRefusalPassesTheRouteMiddleware() throws {
        let calls = FastAndBlockingPathTests.Counter()
        struct Counting: HTTPMiddleware {
            let calls: @Sendable () -> Void
            func handle(_ request: HTTPRequest, context: RequestContext, next: any HTTPResponder) throws -> HTTPReply {
                calls()
                return try next.respond(to: request, context: context)
            }
        }
        let renderer = ErrorRenderer(busy: { refusal in
            HTTPError(.serviceUnavailable, detail: refusal.detail, type: "urn:test:busy", headers: refusal.headers)
        }, unhandled: { _, _, _ in HTTPResponse(status: .internalServerError) })
        var routes = RouterBuilder(middleware: [Counting { calls.increment() }], errorRenderer: renderer)
        let gate = Gate()
        Self.routes(&routes, gate: gate, limits: .init(threads: 1, queue: 0, perClient: 1))
        let router = routes.build()
        func reply(_ client: String) throws -> HTTPReply {
            let resolution = router.resolve(method: .get, path: "/list/free")
            return try resolution.responder.respond(
                to: HTTPRequest(method: .get, target: "/list/free"),
                context: RequestContext(peerAddress: IPAddress(client)!, parameters: resolution.parameters))
        }
        guard case let .blocking(work) = try reply("192.0.2.1") else {
            Issue.record("an admitted read is blocking work")
            return
        }
        guard case let .response(refusal) = try reply("192.0.2.1") else {
            Issue.record("a refusal is answered at once")
            return
        }
        #expect(refusal.status.code == 503 && refusal.headers["Retry-After"] == "1")
        if case let .bytes(body) = refusal.body {
            #expect(String(decoding: body, as: UTF8.self).contains("urn:test:busy"))
        }
        #expect(calls.value == 2, "the refusal went through the route's middleware")
        // The lane's one place is taken: another client finds it full.
        guard case .response = try reply("192.0.2.2") else {
            Issue.record("a full lane refuses at once")
            return
        }
        #expect(try work().status.code == 200)
        guard case .blocking = try reply("192.0.2.2") else {
            Issue.record("after the work ran, its place is free again")
            return
        }
    }

    @Test func admissionCountsPerClientAndReleasesTicketsDroppedUnrun() throws {
        let admission = ReadAdmission(limits: .init(threads: 1, queue: 2, perClient: 2))
        let a1 = try admission.admit(client: "a")
        let a2 = try admission.admit(client: "a")
        #expect(throws: ServerBusy(.clientLimit(limit: 2))) { try admission.admit(client: "a") }
        var b1: ReadAdmission.Ticket? = try admission.admit(client: "b")
        #expect(throws: ServerBusy(.queueFull(.reads))) { try admission.admit(client: "c") }
        #expect(admission.statistics.inFlight == 3)
        #expect(admission.statistics.refusedClientLimit == 1 && admission.statistics.refusedQueueFull == 1)

        let ran = a1.run { HTTPResponse(status: .ok) }
        #expect(ran.status.code == 200)
        a1.release()  // a second release changes nothing
        #expect(admission.statistics.inFlight == 2)
        try admission.admit(client: "a").release()
        // Work dropped unrun (a pool stopping) gives its place back with its last reference.
        #expect(b1 != nil)
        b1 = nil
        #expect(admission.statistics.inFlight == 1)
        a2.release()
        #expect(admission.statistics.inFlight == 0 && admission.statistics.running == 0)
        // With perClient 0 one client may take the whole lane.
        let open = ReadAdmission(limits: .init(threads: 2, queue: 1, perClient: 0))
        let tickets = try (0..<3).map { _ in try open.admit(client: "a") }
        #expect(throws: ServerBusy(.queueFull(.reads))) { try open.admit(client: "a") }
        tickets.forEach { $0.release() }
    }

    /// The nice value of the calling thread: field 19 of its `/proc/self/task/<tid>/stat`
    /// (`/proc/thread-self` is that directory).
    static func callingThreadNice() -> Int? {
        guard let stat = try? String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")  // fields[0] is field 3
        return fields.count > 16 ? Int(fields[16]) : nil
    }

    /// `GET /cost/{id}`: an expensive read unless the query says `cost=cheap` (the route's
    /// classifier); an expensive one waits at `gate`. Each answers its thread's nice value.
    static func classifiedRoutes(_ routes: inout RouterBuilder, gate: Gate, limits: ReadAdmission.Limits) {
        routes.readLimits = limits
        routes.add(.get, "/cost/{id}", options: .expensiveRead(when: { $0.query("cost") != "cheap" }), fast: { _, _ in nil },
                   blocking: { request, _ in
            if request.query("cost") != "cheap" { gate.pass() }
            return HTTPResponse(contentType: "text/plain", bytes: Array("nice \(Self.callingThreadNice() ?? -1)".utf8))
        })
    }

    @Test func aReadItsRouteCallsCheapRunsOnTheWorkersWhileTheLaneIsFull() throws {
        let gate = Gate()
        let server = try TestServer(workerThreads: 2) { routes in
            Self.classifiedRoutes(&routes, gate: gate, limits: .init(threads: 1, queue: 0, perClient: 0))
        }
        defer { server.stop() }
        let lane = try #require(server.router.readAdmission)
        let held = try server.client()
        try held.send(Self.get("/cost/a"))
        #expect(gate.waitForArrival())
        #expect(lane.statistics.inFlight == 1 && lane.statistics.running == 1)

        // The lane is full: an expensive read is refused, a cheap one from the same address served.
        let client = try server.client()
        try client.send(Self.get("/cost/b?cost=high"))
        try Self.expectBusy(try client.readResponse())
        try client.send(Self.get("/cost/c?cost=cheap"))
        let cheap = try client.readResponse()
        #expect(cheap.status == 200, "\(cheap.statusLine) \(cheap.text)")
        #expect(cheap.text.hasPrefix("nice "))
        #expect(lane.statistics.inFlight == 1 && lane.statistics.refusedQueueFull == 1, "the cheap read was never admitted")

        gate.open()
        #expect(try held.readResponse().status == 200)
        #expect(eventually { lane.statistics.inFlight == 0 })
    }

    @Test func theLaneThreadsRunAtTheirNiceValueAndTheWorkersAtTheProcesss() throws {
        let gate = Gate()
        gate.open()
        gate.open()
        let server = try TestServer(workerThreads: 1) { routes in
            Self.classifiedRoutes(&routes, gate: gate, limits: .init(threads: 1, queue: 4, perClient: 0, nice: 13))
        }
        defer { server.stop() }
        let process = try #require(Self.processNice())
        let client = try server.client()
        try client.send(Self.get("/cost/a"))
        #expect(try client.readResponse().text == "nice \(max(13, process))", "setpriority cannot go below the process's own")
        try client.send(Self.get("/cost/b?cost=cheap"))
        #expect(try client.readResponse().text == "nice \(process)")
        #expect(ReadAdmission.Limits().nice == 10, "the stated default")
        #expect(ReadAdmission.Limits(nice: 40).nice == 19 && ReadAdmission.Limits(nice: -5).nice == 0)
    }

    /// The nice value of the process's main thread (field 19 of `/proc/self/stat`).
    static func processNice() -> Int? {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8), let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 16 ? Int(fields[16]) : nil
    }
}
