import BlueLibraryTestSupport
import Essentials
import Foundation
import HTTPServer
import HTTPTestSupport
import Library
import Storage
import Postgres
import TestThreads
import Testing

@testable import BlueLibraryServer

/// The app on PostgreSQL in this process: the backend is chosen by the URL, the database's
/// absence is 503 (never 500), `/readyz` follows the database and `/healthz` does not.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads)
struct PostgresAppTests {
    static func app(_ url: String, _ adjust: (inout ServeConfiguration) -> Void = { _ in }) throws -> BlueLibraryApp {
        try TestApp.make {
            $0.databaseURL = url
            $0.databasePoolSize = 4
            $0.seed = false
            adjust(&$0)
        }
    }

    @Test func aDatabaseURLRunsTheAppOnPostgreSQL() throws {
        let app = try Self.app(try PostgresServer.shared().makeDatabase())
        app.start()
        defer { app.shutdown() }
        #expect(app.backend is PostgresBackend && app.backend.isShared)
        let created = try RawHTTPClient.request(
            port: app.port, method: "POST", path: "/albums", headers: ["Content-Type": "application/json"],
            body: Array(#"{"title":"Blue Train","artist":"John Coltrane"}"#.utf8))
        #expect(created.status == 201)
        let list = try RawHTTPClient.request(port: app.port, path: "/albums")
        #expect(list.status == 200 && list.text.contains("Blue Train"))
        #expect(try RawHTTPClient.request(port: app.port, path: "/readyz").status == 200)
        let metrics = try RawHTTPClient.request(port: app.port, path: "/metrics").text
        #expect(metrics.contains("bluelibrary_db_pool_open_connections"))
        let reads = Self.sample("bluelibrary_db_version_reads_total", in: metrics)
        let calls = Self.sample("bluelibrary_db_version_read_calls_total", in: metrics)
        #expect(reads.map { $0 >= 1 } == true && calls.map { $0 >= reads! } == true, "the list read its version: \(String(describing: reads)) of \(String(describing: calls))")
        #expect(!metrics.contains("bluelibrary_db_reader_waits_total"), "SQLite's metrics are SQLite's")
    }

    /// The value of the unlabelled sample `name` in a /metrics text.
    static func sample(_ name: String, in metrics: String) -> Int? {
        metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ").last ?? "") }
    }

    @Test func readyzFollowsTheDatabaseAndHealthzDoesNot() throws {
        let cluster = try PostgresServer()
        let app = try Self.app(try cluster.makeDatabase())
        app.start()
        defer { app.shutdown() }
        #expect(try RawHTTPClient.request(port: app.port, path: "/readyz").status == 200)
        try cluster.stop()
        let down = try RawHTTPClient.request(port: app.port, path: "/readyz")
        #expect(down.status == 503 && down.header("Retry-After") != nil)
        #expect(down.text.contains("database-unavailable"))
        #expect(try RawHTTPClient.request(port: app.port, path: "/healthz").status == 200)
        let list = try RawHTTPClient.request(port: app.port, path: "/albums")
        #expect(list.status == 503 && list.header("Retry-After") != nil, "never 500: \(list.status) \(list.text)")
        #expect(list.text.contains("urn:bluelibrary:problem:database-unavailable"))
        try cluster.start()
        #expect(eventually(timeout: .seconds(20), pollingEvery: .milliseconds(100)) {
            (try? RawHTTPClient.request(port: app.port, path: "/readyz").status) == 200
        })
        #expect(try RawHTTPClient.request(port: app.port, path: "/albums").status == 200, "service resumes by itself")
    }

    @Test func anUnavailableDependencyAnywhereIs503WithRetryAfter() throws {
        let renderer = BlueLibraryApp.errorRenderer(logger: JSONLogger(level: .error, sink: { _ in })) { _ in false }
        let request = HTTPRequest(method: .get, target: "/albums")
        let context = RequestContext(peerAddress: IPAddress("127.0.0.1")!)
        let exhausted = PostgresError(kind: .poolExhausted, message: "no free connection")
        for error: any Error in [
            exhausted, LibraryError.storage(UnderlyingError(exhausted)),
            LibraryError.storage(UnderlyingError(PostgresError(kind: .connection, message: "refused"))),
        ] {
            let response = renderer.unhandled(error, request, context)
            #expect(response.status == .serviceUnavailable, "\(error)")
            #expect(response.headers["Retry-After"] != nil)
        }
        // A PostgreSQL error that is no outage (a bug, a constraint) stays a 500.
        let other = renderer.unhandled(LibraryError.storage(UnderlyingError(PostgresError(kind: .other, message: "syntax"))), request, context)
        #expect(other.status == .internalServerError)
    }

    /// A listener waiting out its reconnect backoff (the database refused it) is ended by
    /// `close()` at once, not when the pause is over: the change follower stops promptly.
    @Test func closeEndsAListenersBackoffPause() throws {
        let wakeup = ListenWakeup(url: "postgres://127.0.0.1:1/none", commits: "bluelibrary_commits", events: NotifyRelay.channel,
                                  backoff: Backoff(first: .seconds(120), longest: .seconds(120)))
        #expect(wakeup.wait(upTo: .seconds(5)) == .nothing, "nothing listens on port 1: the connect fails")
        // Closed once the next wait is (most likely) in its pause; a close that comes first
        // ends that wait at its start, which passes too.
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) { wakeup.close() }
        let started = ContinuousClock.now
        #expect(wakeup.wait(upTo: .seconds(120)) == .nothing)
        #expect(ContinuousClock.now - started < .seconds(60), "close() ended the 120 s pause")
    }

    @Test func theCommitListenerWakesOnANotificationAndComesBackAfterARestart() throws {
        let cluster = try PostgresServer()
        let url = try cluster.makeDatabase()
        let wakeup = ListenWakeup(url: url, commits: "bluelibrary_commits", events: NotifyRelay.channel)
        defer { wakeup.close() }
        #expect(wakeup.wait(upTo: .seconds(1)).committed, "the first wait connects, and says so (the follower then reads)")
        #expect(wakeup.wait(upTo: .milliseconds(50)) == .nothing, "nothing committed: a timeout")
        let other = try PostgresConnection(url: url)
        try other.run("SELECT pg_notify('bluelibrary_commits', 'default')")
        #expect(wakeup.wait(upTo: .seconds(10)).committed, "woken by the notification, long before the timeout")

        // An event relayed by another instance arrives whole.
        let relay = NotifyRelay(pool: PostgresPool(.init(url: url, size: 1)))
        let event = RelayedEvent(instance: relay.instance, library: "default", name: "state.changed", version: 3, json: #"{"client":"c"}"#)
        relay.relay(event)
        var received: [RelayedEvent] = []
        #expect(eventually { received += wakeup.wait(upTo: .milliseconds(100)).events; return !received.isEmpty })
        #expect(received == [event])

        try cluster.stop()
        #expect(wakeup.wait(upTo: .milliseconds(200)) == .nothing, "the connection is gone")
        try cluster.start()
        #expect(eventually(timeout: .seconds(20), pollingEvery: .milliseconds(10)) { wakeup.wait(upTo: .milliseconds(100)).committed },
                "listening again after the restart, with backoff")
        let again = try PostgresConnection(url: url)
        try again.run("SELECT pg_notify('bluelibrary_commits', 'default')")
        #expect(wakeup.wait(upTo: .seconds(10)).committed)
    }

    @Test func theDatabasePasswordNeverReachesAMessage() {
        #expect(PostgresBackend.redacted("postgres://app:s3cret@db:5432/lib") == "postgres://app:****@db:5432/lib")
        #expect(PostgresBackend.redacted("postgres://app@db/lib") == "postgres://app@db/lib")
        #expect(PostgresBackend.redacted("postgresql://db/lib") == "postgresql://db/lib")
        // An unencoded @ in the password: everything up to the last @ is hidden.
        #expect(PostgresBackend.redacted("postgres://app:p@ss@word@db:5432/lib") == "postgres://app:****@db:5432/lib")
        // The password as a query parameter (any case), the other parameters kept.
        #expect(PostgresBackend.redacted("postgres://db/lib?user=app&password=s3cret&sslmode=require")
            == "postgres://db/lib?user=app&password=****&sslmode=require")
        #expect(PostgresBackend.redacted("postgresql://app@db/lib?PASSWORD=s3cret") == "postgresql://app@db/lib?PASSWORD=****")
        for url in ["postgres://app:p@ss@word@db:5432/lib", "postgres://db/lib?user=app&password=s3cret&sslmode=require",
                    "postgres://app:s3cret@db/lib?password=s3cret"] {
            let shown = PostgresBackend.redacted(url)
            #expect(!shown.contains("s3cret") && !shown.contains("ss@word"), "\(shown)")
        }
    }

    /// `/readyz` under load: a pool whose every connection is busy is a database that answers
    /// (it answers the requests holding them), so readiness does not flap.
    @Test func aFullPoolIsReadyAndAStoppedDatabaseIsNot() throws {
        let cluster = try PostgresServer()
        let pool = PostgresPool(PostgresPool.Configuration(url: try cluster.makeDatabase(), size: 1, acquireTimeout: .milliseconds(200)))
        #expect(PostgresDatabase.ping(pool) == nil)
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = try? pool.withConnection { _ in
                holding.signal()
                release.wait()
            }
            done.signal()
        }
        holding.wait()
        let busy = PostgresDatabase.ping(pool)
        release.signal()
        done.wait()
        #expect(busy == nil, "a full pool made /readyz say the database does not answer: \(String(describing: busy))")
        #expect(pool.statistics.exhausted >= 1, "the ping did find the pool full")
        try cluster.stop()
        let down = PostgresDatabase.ping(pool)
        #expect(down != nil && down?.isUnavailable == true)
        try cluster.start()
    }

    @Test func resumingAnywhereFromAnyIDOfTheFeed() throws {
        let url = try PostgresServer.shared().makeDatabase()
        let a = try Self.app(url) { $0.events.replayCapacity = 2 }
        let b = try Self.app(url) { $0.events.replayCapacity = 2 }
        a.start()
        b.start()
        defer {
            a.shutdown()
            b.shutdown()
        }
        func add(_ port: Int, _ title: String) throws {
            let response = try RawHTTPClient.request(
                port: port, method: "POST", path: "/albums", headers: ["Content-Type": "application/json"],
                body: Array(#"{"title":"\#(title)","artist":"A"}"#.utf8))
            #expect(response.status == 201)
        }
        for index in 0..<5 { try add(a.port, "A\(index)") }  // versions 1...5
        // state.changed events relayed from A come between, in no fixed order: look at the album events.
        func albumEvents(_ stream: SSEClient, _ count: Int) throws -> [SSEEvent] {
            var found: [SSEEvent] = []
            while found.count < count, let event = try stream.next() {
                if event.name.hasPrefix("album.") { found.append(event) }
            }
            return found
        }
        // B keeps two events; 1 is older: the feed fills 2...5 in.
        let old = try SSEClient(port: b.port, lastEventID: "1")
        let missed = try albumEvents(old, 4)
        #expect(missed.map(\.id) == ["2", "3", "4", "5"] && missed.allSatisfy { $0.name == "album.added" }, "\(missed)")
        // An id B may not have published yet (written on A a moment ago): B catches up first.
        try add(a.port, "Six")
        let ahead = try SSEClient(port: b.port, lastEventID: "6")
        #expect(ahead.pending.allSatisfy { $0.name != "library.outdated" })
        try add(a.port, "Seven")
        let next = try #require(try albumEvents(ahead, 1).first)
        #expect(next.name == "album.added" && next.id == "7", "\(next)")
    }

    @Test func aPoolOfOneConnectionServesEveryKindOfRequest() throws {
        // No path holds a pooled connection while it asks for another (that would wait out the
        // acquire timeout and answer 503 with a pool of one).
        let app = try Self.app(try PostgresServer.shared().makeDatabase()) {
            $0.databasePoolSize = 1
            $0.token = AccessToken("pool-of-one-token-123")
        }
        app.start()
        defer { app.shutdown() }
        let auth = ["Authorization": "Bearer pool-of-one-token-123"]
        func call(_ method: String, _ path: String, _ json: String? = nil, headers: [String: String] = [:]) throws -> Int {
            var headers = headers.merging(auth) { $1 }
            if json != nil { headers["Content-Type"] = method == "PATCH" && path == "/settings" ? "application/merge-patch+json" : "application/json" }
            return try RawHTTPClient.request(port: app.port, method: method, path: path, headers: headers,
                                             body: Array((json ?? "").utf8)).status
        }
        let stream = try SSEClient(port: app.port)
        #expect(try call("POST", "/albums", #"{"title":"One","artist":"A"}"#, headers: ["Idempotency-Key": "k1"]) == 201)
        #expect(try call("POST", "/albums", #"{"title":"One","artist":"A"}"#, headers: ["Idempotency-Key": "k1"]) == 201)
        #expect(try call("GET", "/albums") == 200)
        #expect(try call("GET", "/albums/at/0") == 200)
        #expect(try call("PATCH", "/settings", #"{"paging": {"defaultLimit": 3}, "access": {"passcodeEnabled": true}}"#) == 200)
        #expect(try call("POST", "/libraries", #"{"id":"jazz"}"#) == 201)
        #expect(try call("POST", "/views", #"{"id":"all","sources":["default","jazz"]}"#) == 201)
        #expect(try call("GET", "/views/all/albums") == 200)
        #expect(try call("POST", "/undo") == 200)
        #expect(try call("GET", "/changes?since=0") == 200)
        #expect(try call("GET", "/readyz") == 200)
        #expect(try stream.next()?.name == "album.added")
    }
}
