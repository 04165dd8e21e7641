import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// A create cut off by the database going away while its write waits (the COMMIT never
/// happens): its `Idempotency-Key` was to be claimed in that write's transaction, so the key
/// stays free and a retry with it, once the database is back, creates the album once; a
/// further retry replays that answer.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct IdempotentRetryTests {
    @Test func aCreateCutOffByTheDatabaseIsMadeOnceByItsRetry() throws {
        let postgres = try PostgresServer()
        let url = try postgres.makeDatabase()
        let database = String(url.split(separator: "/").last ?? "")
        let directory = try TemporaryDirectory(prefix: "bluelibrary-idempotent-retry")
        let server = try ServerProcess(environment: ["BLUELIBRARY_DATABASE_URL": url, "BLUELIBRARY_EVENT_LOOPS": "1"],
                                       dataDirectory: directory.path)
        var stopped = false
        defer { if stopped { try? postgres.start() } }

        // Another session holds the library's row, so the create's write waits in its transaction.
        let holder = try RunningChild(
            PostgresServer.binDirectory + "/psql",
            ["-X", "-q", "-d", url, "-c", "BEGIN; SELECT 1 FROM libraries WHERE name = 'default' FOR UPDATE; SELECT pg_sleep(60);"],
            environment: ["LANG": "C"], captureOutput: true)
        defer {
            holder.terminate()
            holder.waitUntilExit()
        }
        #expect(eventually(timeout: .seconds(10)) {
            (try? postgres.execute("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%' AND state = 'active' AND pid <> pg_backend_pid()",
                                   database: database)) == "1"
        })
        let headers = ["Content-Type": "application/json", "Idempotency-Key": "cut-off-1"]
        let body = Array(#"{"title": "Cut off", "artist": "Failover"}"#.utf8)
        let first = Locked<(status: Int, text: String)?>(nil)
        let answered = DispatchSemaphore(value: 0)
        let port = server.port
        Thread.detachNewThread {
            let response = try? RawHTTPClient.request(port: port, method: "POST", path: "/albums", headers: headers, body: body, receiveTimeout: 60)
            first.withLock { $0 = response.map { ($0.status, $0.text) } }
            answered.signal()
        }
        #expect(eventually(timeout: .seconds(10)) {
            (try? postgres.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'", database: database)) == "1"
        }, "the create never waited for the library's row")

        // The database goes away with the create's transaction open: it never commits.
        try postgres.stop()
        stopped = true
        #expect(answered.wait(timeout: .now() + 60) == .success)
        let cutOff = try #require(first.value, "the cut-off create got no answer")
        #expect(cutOff.status == 503, "\(cutOff.status) \(cutOff.text)")
        #expect(cutOff.text.contains("same Idempotency-Key"), "the 503 says a repeat with the key is safe: \(cutOff.text)")
        try postgres.start()
        stopped = false

        // The retry (once the instance has its database again) creates the album, once.
        var retry = try RawHTTPClient.request(port: server.port, method: "POST", path: "/albums", headers: headers, body: body)
        #expect(eventually(timeout: .seconds(20)) {
            if retry.status == 503, let next = try? RawHTTPClient.request(port: server.port, method: "POST", path: "/albums",
                                                                          headers: headers, body: body) {
                retry = next
            }
            return retry.status != 503
        })
        #expect(retry.status == 201, "\(retry.statusLine) \(retry.text)")
        #expect(retry.header("Idempotent-Replayed") == nil, "the first attempt left nothing to replay")
        let again = try RawHTTPClient.request(port: server.port, method: "POST", path: "/albums", headers: headers, body: body)
        #expect(again.status == 201)
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(again.text == retry.text)
        let stored = try RawHTTPClient.request(port: server.port, path: "/albums?q=cut&count=true").json()
        #expect(stored["total"] as? Int == 1, "the album exists once: \(stored)")
    }
}
