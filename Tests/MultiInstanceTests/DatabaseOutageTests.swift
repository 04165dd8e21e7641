import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// PostgreSQL stopped under load and started again, with two instances behind nginx: while it
/// is gone, requests that need it get 503 with Retry-After (an answer, not a hang; no instance
/// dies), `/readyz` is 503 and `/healthz` 200; once it is back, service resumes by itself and
/// every acknowledged write is there.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct DatabaseOutageTests {
    @Test func stoppedDatabaseIs503ThenServiceResumesWithEveryAcknowledgedWrite() throws {
        // A cluster of its own: this test stops it.
        let postgres = try PostgresServer()
        let cluster = try InstanceCluster(databaseURL: try postgres.makeDatabase(), count: 2)
        let load = BackgroundLoad(port: cluster.port, writers: 2, readers: 2)
        var stopped = false
        defer {
            if stopped { try? postgres.start() }
            _ = load.stop()
        }
        #expect(eventually(timeout: .seconds(20)) { load.count(.write, status: 201) >= 20 && load.count(.read, status: 200) >= 20 },
                "the load never got going: \(load.results.suffix(5))\n\(cluster.logTail())")

        try postgres.stop()
        stopped = true
        // The load sees the outage as 503s ...
        #expect(eventually(timeout: .seconds(20)) { load.count(.write, status: 503) >= 3 && load.count(.read, status: 503) >= 3 },
                "no 503 while the database is stopped: \(load.results.suffix(5))\n\(cluster.logTail())")
        for (index, instance) in cluster.instances.enumerated() {
            // ... and so does each instance asked directly: not ready, but alive.
            #expect(eventually(timeout: .seconds(10)) { (try? RawHTTPClient.request(port: instance.port, path: "/readyz"))?.status == 503 },
                    "instance \(index): /readyz never 503")
            #expect(try RawHTTPClient.request(port: instance.port, path: "/healthz").status == 200)
            for (method, path, body) in [("GET", "/albums?limit=7&nc=\(index)", ""), ("POST", "/albums", #"{"title": "during", "artist": "Outage"}"#)] {
                let response = try RawHTTPClient.request(port: instance.port, method: method, path: path,
                                                         headers: body.isEmpty ? [:] : ["Content-Type": "application/json"],
                                                         body: Array(body.utf8), receiveTimeout: 15)
                #expect(response.status == 503, "instance \(index) \(method) \(path): \(response.statusLine) \(response.text.prefix(200))")
                #expect(Int(response.header("Retry-After") ?? "") ?? 0 >= 1, "instance \(index) \(method) \(path): no Retry-After")
                #expect(try response.json()["type"] as? String == "urn:bluelibrary:problem:database-unavailable")
            }
        }

        try postgres.start()
        stopped = false
        // Service resumes by itself: every instance ready again, writes acknowledged again.
        for (index, instance) in cluster.instances.enumerated() {
            #expect(eventually(timeout: .seconds(30), pollingEvery: .milliseconds(50)) {
                (try? RawHTTPClient.request(port: instance.port, path: "/readyz"))?.status == 200
            }, "instance \(index) never became ready again\n\(cluster.logTail())")
        }
        let resumedAt = load.count(.write, status: 201)
        #expect(eventually(timeout: .seconds(30)) { load.count(.write, status: 201) >= resumedAt + 10 && load.count(.read, status: 200) >= 10 },
                "writes did not resume: \(load.results.suffix(5))")
        let outcomes = load.stop()

        // Every request got an answer: success or 503 with Retry-After; no instance died.
        #expect(cluster.allRunning, "an instance died\n\(cluster.logTail())")
        let unexpected = outcomes.filter { outcome in
            switch outcome.status {
            case 200, 201: false
            case 503: Int(outcome.retryAfter ?? "") ?? 0 < 1
            default: true
            }
        }
        #expect(unexpected.count == 0, "\(unexpected.count) unexpected outcomes, e.g. \(unexpected.prefix(5))\n\(cluster.errorLines())")
        // Every acknowledged write is in the database.
        let acknowledged = Set(outcomes.compactMap(\.id))
        let stored = Set(try LibraryProbe.allIDs(port: cluster.port))
        #expect(acknowledged.subtracting(stored).count == 0, "acknowledged but missing: \(acknowledged.subtracting(stored).prefix(10))")
    }
}
