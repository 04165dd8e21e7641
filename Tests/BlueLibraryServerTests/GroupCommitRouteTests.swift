#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryTestSupport
import Dispatch
import Foundation
import HTTPTestSupport
import Library
import Storage
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Group commit over real sockets: requests queued behind a busy writer commit in one
/// transaction, each under its own savepoint, and everything a client can observe (status,
/// change feed, events, undo, idempotency) is as if they had run one by one in queue order.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) final class GroupCommitRouteTests {
    typealias Routes = LibraryRouteTests

    static func store(_ app: BlueLibraryApp) throws -> SQLiteAlbumStore {
        try #require((app.backend as? SQLiteBackend)?.store)
    }

    /// Holds the writer inside a write transaction until `release()`; writes queue behind it.
    final class HeldWriter: Sendable {
        private let entered = DispatchSemaphore(value: 0)
        private let gate = DispatchSemaphore(value: 0)
        private let done = DispatchSemaphore(value: 0)

        init(_ store: SQLiteAlbumStore) {
            Thread.detachNewThread { [entered, gate, done] in
                _ = try? store.write([LibraryID.default]) { _ in
                    entered.signal()
                    gate.wait()
                }
                done.signal()
            }
            entered.wait()
        }

        func release() {
            gate.signal()
            done.wait()
        }
    }

    /// One request on a thread of its own; `join()` waits for its response.
    final class Call: @unchecked Sendable {
        // Written once by the thread before `finished.signal()`, read after `finished.wait()`.
        private var result: Result<RawHTTPClient.Response, any Error>?
        private let finished = DispatchSemaphore(value: 0)

        init(_ port: Int, _ method: String, _ path: String, json: String? = nil, headers: [String: String] = [:]) {
            Thread.detachNewThread { [self] in
                result = Result { try Routes.request(port, method, path, json: json, headers: headers) }
                finished.signal()
            }
        }

        func join() throws -> RawHTTPClient.Response {
            finished.wait()
            return try result!.get()
        }
    }

    /// Starts each request once the previous one is queued behind the held writer, so the
    /// queue order is the order of `requests` (each request here queues one write before it
    /// waits: its claim with an Idempotency-Key, its mutation without).
    static func queue(_ requests: [(method: String, path: String, json: String?, headers: [String: String])],
                      port: Int, store: SQLiteAlbumStore) -> [Call] {
        var calls: [Call] = []
        for (position, request) in requests.enumerated() {
            calls.append(Call(port, request.method, request.path, json: request.json, headers: request.headers))
            #expect(eventually { store.queuedWriteCount == position + 1 }, "request \(position) queued")
        }
        return calls
    }

    static func version(_ port: Int) throws -> Int {
        try #require(try Routes.request(port, "GET", "/albums?limit=1").json()["version"] as? Int)
    }

    @Test(arguments: [ServeConfiguration.Durability.normal, .full])
    func failingMutationsAmidABatchFailAloneAndTheRestIsAsIfOneByOne(_ durability: ServeConfiguration.Durability) throws {
        let app = try TestApp.make { config in
            config.workers = 12
            config.seed = false
            config.durability = durability
        }
        app.start()
        defer { app.shutdown() }
        let port = app.port
        let store = try Self.store(app)
        let a = try Routes.add(port, "Keep A")
        let b = try Routes.add(port, "Keep B")
        let start = try Self.version(port)
        let events = try SSEClient(port: port)
        let before = store.groupCommitStatistics

        let held = HeldWriter(store)
        let calls = Self.queue([
            ("POST", "/albums", #"{"title": "One", "artist": "Tester"}"#, [:]),
            ("PATCH", "/albums/\(a)", #"{"title": "Lost"}"#, ["If-Match": #""not-the-etag""#]),
            ("POST", "/albums", #"{"title": "Two", "artist": "Tester"}"#, [:]),
            ("DELETE", "/albums/01ARZ3NDEKTSV4RRFFQ69G5FAV", nil, [:]),
            ("PATCH", "/albums/\(b)", #"{"title": "Keep B2"}"#, [:]),
            ("POST", "/albums", #"{"title": "Three", "artist": "Tester"}"#, [:]),
        ], port: port, store: store)
        held.release()
        let responses = try calls.map { try $0.join() }
        #expect(responses.map(\.status) == [201, 412, 201, 404, 200, 201], "\(responses.map(\.text))")
        let statistics = store.groupCommitStatistics
        #expect(statistics.transactions - before.transactions == 2, "the held write, then one transaction for all six")
        #expect(statistics.largestBatch >= 6)

        // The data: the failed PATCH changed nothing, the others are all there.
        let one = try #require(try responses[0].json()["id"] as? String)
        let two = try #require(try responses[2].json()["id"] as? String)
        let three = try #require(try responses[5].json()["id"] as? String)
        #expect(try Routes.ids(port) == [a, b, one, two, three])
        #expect(try Routes.request(port, "GET", "/albums/\(a)").json()["title"] as? String == "Keep A")
        #expect(try Self.version(port) == start + 4)

        // The change feed: one entry per successful mutation, versions in queue order.
        let changes = try LibraryMoveConcurrencyTests.changes(port, "", since: start)
        #expect(changes.map { $0["version"] as? Int } == [start + 1, start + 2, start + 3, start + 4])
        #expect(changes.map { $0["kind"] as? String } == ["added", "added", "updated", "added"])
        #expect(changes.map { $0["id"] as? String } == [one, two, b, three])

        // The events: in version order, one versioned album event per change.
        var albumEvents: [(String, String)] = []
        while albumEvents.count < 4, let event = try events.next() {
            if event.name.hasPrefix("album.") { albumEvents.append((event.name, event.id ?? "")) }
        }
        #expect(albumEvents.map(\.0) == ["album.added", "album.added", "album.updated", "album.added"])
        #expect(albumEvents.map(\.1) == (1...4).map { String(start + $0) })

        // Undo: the last successful mutation comes off first.
        let undone = try Routes.request(port, "POST", "/undo")
        #expect(undone.status == 200, "\(undone.text)")
        #expect(try Routes.ids(port) == [a, b, one, two])
        _ = try Routes.request(port, "POST", "/undo")
        #expect(try Routes.request(port, "GET", "/albums/\(b)").json()["title"] as? String == "Keep B")
    }

    /// Two creates with the same Idempotency-Key in one batch: the second finds the key claimed
    /// by the first (409, or the first's answer once recorded), one album is created, and a
    /// retry replays it.
    @Test func oneIdempotencyKeyTwiceInABatchCreatesOnce() throws {
        let app = try TestApp.make { config in
            config.workers = 12
            config.seed = false
        }
        app.start()
        defer { app.shutdown() }
        let port = app.port
        let store = try Self.store(app)
        let body = #"{"title": "Once", "artist": "Tester"}"#
        let key = ["Idempotency-Key": "batch-key-1"]
        let held = HeldWriter(store)
        let calls = Self.queue([("POST", "/albums", body, key), ("POST", "/albums", body, key)], port: port, store: store)
        held.release()
        let responses = try calls.map { try $0.join() }
        // The second's claim meets the first's in their transaction and is rolled back; it then
        // reads the key: 409 while the first's answer is being recorded, or that answer replayed.
        #expect(responses[0].status == 201, "\(responses[0].text)")
        #expect(responses[1].status == 409 || (responses[1].status == 201 && responses[1].header("Idempotent-Replayed") == "true"
            && responses[1].text == responses[0].text), "\(responses.map(\.text))")
        let id = try #require(try responses[0].json()["id"] as? String)
        #expect(try Routes.ids(port) == [id])
        let retry = try Routes.request(port, "POST", "/albums", json: body, headers: key)
        #expect(retry.status == 201)
        #expect(retry.header("Idempotent-Replayed") == "true")
        #expect(try retry.json()["id"] as? String == id)
        #expect(try Routes.ids(port) == [id])
    }

    /// Many clients writing at once, the process killed without warning: every create that was
    /// acknowledged is there after a restart, and the change feed has no gap.
    @Test(arguments: ["normal", "full"])
    func killedWhileBatchesCommitLosesNothingAcknowledged(_ durability: String) throws {
        let data = TestApp.temporaryDirectory()
        let server = try ServerProcess(arguments: ["--no-seed", "--workers", "24", "--durability", durability], dataDirectory: data)
        let port = server.port
        let clients = 16
        let load = Load()
        for client in 0..<clients {
            Thread.detachNewThread {
                var n = 0
                while !load.stop.load(ordering: .relaxed) {
                    n += 1
                    guard let response = try? Routes.request(
                        port, "POST", "/albums", json: #"{"title": "C\#(client) N\#(n)", "artist": "Tester"}"#) else { break }
                    if response.status == 201, let id = try? response.json()["id"] as? String {
                        load.acknowledged.withLock { $0.append(id) }
                    }
                }
                load.finished.signal()
            }
        }
        #expect(eventually(timeout: .seconds(60)) { load.acknowledged.withLock { $0.count } >= 300 })
        server.signal(SIGKILL)
        _ = server.waitForExit(timeout: 10)
        load.stop.store(true, ordering: .relaxed)
        for _ in 0..<clients { load.finished.wait() }
        let promised = Set(load.acknowledged.withLock { $0 })

        let restarted = try ServerProcess(arguments: ["--no-seed"], dataDirectory: data)
        var stored: [String] = []
        var offset = 0
        while true {
            let page = try RawHTTPClient.request(port: restarted.port, path: "/albums?limit=500&offset=\(offset)").json()
            let items = (page["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            stored += items
            offset += items.count
            if items.count < 500 { break }
        }
        #expect(promised.subtracting(stored).isEmpty, "acknowledged but lost: \(promised.subtracting(stored).count)")
        // Writes in flight at the kill may have committed unacknowledged; nothing else is there.
        #expect(stored.count >= promised.count)
        let changes = try RawHTTPClient.request(port: restarted.port, path: "/changes?since=0&limit=1000").json()
        let versions = (changes["changes"] as? [[String: Any]] ?? []).compactMap { $0["version"] as? Int }
        #expect(!versions.isEmpty && versions == Array(1...versions.count), "no gap in the feed")
        #expect(versions.count == stored.count || changes["more"] as? Bool == true)
    }

    /// What the client threads of the kill test share.
    final class Load: Sendable {
        let acknowledged = Mutex<[String]>([])
        let stop = Atomic<Bool>(false)
        let finished = DispatchSemaphore(value: 0)
    }
}
