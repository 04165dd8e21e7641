#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// SIGTERM under load: requests in flight finish, event streams end cleanly, exit 0.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct GracefulShutdownTests {
    /// Makes sure this process (and the server it starts, which inherits the limit) may hold
    /// `needed` descriptors.
    static func ensureDescriptorLimit(_ needed: rlim_t) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < needed else { return }
        limit.rlim_cur = min(needed, limit.rlim_max)
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    @Test func sigtermWith500InFlightAnd200Subscribers() throws {
        Self.ensureDescriptorLimit(4096)
        let server = try ServerProcess(arguments: ["--shutdown-grace", "600", "--max-connections", "2000"],
                                       dataDirectory: TestApp.temporaryDirectory())

        // Given 200 live subscribers
        var subscribers: [SSEClient] = []
        for _ in 0..<200 {
            let subscriber = try SSEClient(port: server.port)
            #expect(subscriber.head.status == 200)
            subscribers.append(subscriber)
        }
        // and 500 POST /albums whose heads are sent but whose bodies are not complete: each
        // announces its body (Expect: 100-continue), so the server's 100 shows it has the head.
        var inFlight: [(client: RawHTTPClient, rest: String)] = []
        for i in 0..<500 {
            let body = #"{"title": "Drain \#(i)", "artist": "Shutdown Tester"}"#
            let client = try RawHTTPClient(port: server.port, receiveTimeout: 15)
            let split = body.index(body.startIndex, offsetBy: 10)
            try client.send("POST /albums HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\nExpect: 100-continue\r\n\r\n")
            inFlight.append((client, String(body[split...])))
            try client.send(String(body[..<split]))
        }
        for (client, _) in inFlight { #expect(try client.readResponse().status == 100) }
        #expect(server.process.isRunning)

        // When SIGTERM arrives
        server.signal(SIGTERM)
        var subscriberFailures = 0
        for subscriber in subscribers {
            do {
                var last: SSEEvent?
                while let event = try subscriber.next() { last = event }
                if last?.name != "server.shutdown" { subscriberFailures += 1 }
            } catch {
                subscriberFailures += 1
            }
        }
        #expect(subscriberFailures == 0, "subscribers without server.shutdown then the last chunk")
        #expect(server.process.isRunning, "in-flight requests hold the process")

        // and every in-flight request, once its body is complete, is answered 201 with Connection: close.
        for (client, rest) in inFlight { try client.send(rest) }
        var statuses: [Int: Int] = [:]
        var withoutClose = 0
        var titles = Set<String>()
        for (client, _) in inFlight {
            let response = try client.readResponse()
            statuses[response.status, default: 0] += 1
            if response.header("Connection")?.lowercased() != "close" { withoutClose += 1 }
            if let title = try response.json()["title"] as? String { titles.insert(title) }
            #expect(client.isClosedByServer())
        }
        #expect(statuses == [201: 500])
        #expect(withoutClose == 0)
        #expect(titles.count == 500)

        // and the process exits 0 once they are answered, not when the grace period is over (a
        // minute bounds the wait; the grace is ten minutes, so a process that waited it out fails here).
        let status = server.waitForExit(timeout: 60)
        #expect(status == 0, "\(server.logText.suffix(2000))")
        #expect(server.logText.contains("\"message\":\"stopped\""))
    }
}
