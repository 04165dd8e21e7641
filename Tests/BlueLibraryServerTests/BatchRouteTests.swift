import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryServer

/// `POST /batch` over real sockets: idempotent retries, events in version order, races with
/// single writes, limits, and a kill in the middle of a large batch.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) struct BatchRouteTests {
    static func post(_ port: Int, _ path: String, _ json: String, headers: [String: String] = [:]) throws -> RawHTTPClient.Response {
        try RawHTTPClient.request(port: port, method: "POST", path: path, headers: headers.merging(["Content-Type": "application/json"]) { a, _ in a },
                                  body: Array(json.utf8))
    }

    static func adds(_ count: Int, prefix: String) -> String {
        let operations = (0..<count).map { #"{"op": "add", "album": {"title": "\#(prefix) \#($0)", "artist": "Batch"}}"# }
        return #"{"operations": [\#(operations.joined(separator: ","))]}"#
    }

    static func total(_ port: Int, _ library: String = "default") throws -> Int {
        let page = try RawHTTPClient.request(port: port, path: "/libraries/\(library)/albums?limit=1&count=true")
        return try #require(try page.json()["total"] as? Int)
    }

    @Test func anIdempotentRetryGetsTheFirstAnswerAndAppliesNothing() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let key = ["Idempotency-Key": "batch-retry-1"]
        let first = try Self.post(app.port, "/batch", Self.adds(3, prefix: "Once"), headers: key)
        #expect(first.status == 200)
        // When the answer is lost and the client sends the same batch again with the same key
        let again = try Self.post(app.port, "/batch", Self.adds(3, prefix: "Once"), headers: key)
        // Then it gets the first answer, marked as a replay, and nothing more is added
        #expect(again.status == 200 && again.header("Idempotent-Replayed") == "true")
        #expect(again.body == first.body)
        #expect(try Self.total(app.port) == 8)
        // And the same key with another batch is refused
        #expect(try Self.post(app.port, "/batch", Self.adds(2, prefix: "Other"), headers: key).status == 422)
    }

    @Test func oneEventPerChangeInVersionOrderAndNoneForARefusedBatch() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let events = try SSEClient(port: app.port)
        // Given an atomic batch refused at its second operation
        let refused = try Self.post(app.port, "/batch", #"{"operations": [{"op": "delete", "index": 0}, {"op": "move", "ref": 0, "index": 0}]}"#)
        #expect(refused.status == 422)
        let missing = try Self.post(app.port, "/batch", #"{"operations": [{"op": "delete", "index": 0}, {"op": "delete", "index": 99}]}"#)
        #expect(missing.status == 404)
        let problem = try missing.json()
        #expect((problem["detail"] as? String)?.hasPrefix("Operation 1 (delete) was refused") == true)
        #expect((problem["errors"] as? [[String: Any]])?.first?["field"] as? String == "operations[1].index")
        // When a batch of three commits
        let committed = try Self.post(
            app.port, "/batch",
            #"{"operations": [{"op": "add", "album": {"title": "E1", "artist": "V"}}, {"op": "update", "ref": 0, "patch": {"year": 2001}}, {"op": "delete", "index": 0}]}"#)
        #expect(committed.status == 200)
        // Then the stream's next events are its three changes, one version each, in order:
        // nothing of the refused batches went out (or to the feed)
        let received = try events.next(3)
        #expect(received.map(\.name) == ["album.added", "album.updated", "album.deleted"])
        #expect(received.map(\.id) == ["2", "3", "4"])
        let feed = try RawHTTPClient.request(port: app.port, path: "/changes?since=1").json()
        #expect((feed["changes"] as? [[String: Any]])?.compactMap { $0["version"] as? Int } == [2, 3, 4])
        // And one undo takes the batch back
        let undo = try RawHTTPClient.request(port: app.port, method: "POST", path: "/undo")
        #expect(try undo.json()["undone"] as? String == "take back a batch of 3 changes")
        #expect(try Self.total(app.port) == 5)
    }

    @Test func batchesRacingSingleWritesKeepVersionsUniqueAndEventsInOrder() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let port = app.port
        let events = try SSEClient(port: port, path: "/libraries/default/events")
        let failures = Mutex<[String]>([])
        // Ten batches of ten adds on one connection after another, forty single adds on the other
        DispatchQueue.concurrentPerform(iterations: 2) { lane in
            if lane == 0 {
                for round in 0..<10 {
                    let response = try? Self.post(port, "/batch", Self.adds(10, prefix: "B\(round)"))
                    if response?.status != 200 { failures.withLock { $0.append("batch \(round): \(response?.status ?? 0)") } }
                }
            } else {
                for index in 0..<40 {
                    let response = try? Self.post(port, "/albums", #"{"title": "S\#(index)", "artist": "Single"}"#)
                    if response?.status != 201 { failures.withLock { $0.append("single \(index): \(response?.status ?? 0)") } }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        // Every change has its own version, gap-free, in the feed and on the stream in order
        #expect(try Self.total(port) == 5 + 100 + 40)
        let feed = try RawHTTPClient.request(port: port, path: "/changes?since=1&limit=500").json()
        let versions = (feed["changes"] as? [[String: Any]])?.compactMap { $0["version"] as? Int } ?? []
        #expect(versions == Array(2...141))
        // (Single adds also move the adding client's state: `state.changed`, same version.)
        let streamed = try events.next(180).filter { $0.name != "state.changed" }.compactMap { $0.id.flatMap(Int.init) }
        #expect(streamed == Array(2...141))
    }

    @Test func movesToAnotherLibraryCommitWithTheBatchInBothLibraries() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let port = app.port
        typealias Routes = LibraryRouteTests
        try Routes.createLibrary(port, "jazz")
        let kind = try Routes.add(port, "Kind of Blue", in: "/libraries/jazz")
        let before = try Routes.ids(port)
        let (defaultEvents, jazzEvents) = (try SSEClient(port: port), try SSEClient(port: port, path: "/libraries/jazz/events"))
        // An atomic batch refused after its move to jazz changes neither library
        let refused = try Self.post(port, "/batch", #"{"operations": [{"op": "move", "id": "\#(before[1])", "library": "jazz"}, {"op": "delete", "index": 99}]}"#)
        #expect(refused.status == 404)
        #expect(try Routes.ids(port) == before && Routes.ids(port, in: "/libraries/jazz") == [kind])
        // A move to a library that does not exist is a 422 naming `library`
        try Routes.expectProblem(
            try Self.post(port, "/batch", #"{"operations": [{"op": "move", "id": "\#(before[1])", "library": "nope"}]}"#), 422,
            field: "operations[0].library")
        // When a batch adds an album, moves it and another one to jazz, and edits one that stays
        let committed = try Self.post(port, "/batch", #"""
            {"operations": [
              {"op": "add", "album": {"title": "Blue Train", "artist": "John Coltrane"}},
              {"op": "move", "ref": 0, "library": "jazz", "index": 0},
              {"op": "move", "id": "\#(before[1])", "library": "jazz"},
              {"op": "update", "id": "\#(before[0])", "patch": {"year": 1999}}
            ]}
            """#)
        #expect(committed.status == 200, "\(committed.text)")
        let answer = try committed.json()
        let results = try #require(answer["results"] as? [[String: Any]])
        let added = try #require((results[0]["album"] as? [String: Any])?["id"] as? String)
        let moved = try #require(results[2]["album"] as? [String: Any])
        #expect(results[1]["status"] as? Int == 200 && results[1]["version"] as? Int == 3 && results[1]["arrivalVersion"] as? Int == 2)
        #expect(moved["id"] as? String == before[1] && moved["library"] as? String == "jazz" && moved["index"] as? Int == 2)
        #expect(answer["version"] as? Int == 5 && (answer["destinations"] as? [String: Int]) == ["jazz": 3])
        #expect(answer["applied"] as? Int == 4 && answer["refused"] as? Int == 0)
        #expect(try Routes.ids(port, in: "/libraries/jazz") == [added, kind, before[1]])
        #expect(try Routes.ids(port) == before.filter { $0 != before[1] })
        // Then each library's stream has its events, in version order
        let left = try defaultEvents.next(4)
        #expect(left.map(\.name) == ["album.added", "album.deleted", "album.deleted", "album.updated"])
        #expect(left.map(\.id) == ["2", "3", "4", "5"])
        #expect(left[1].json["movedTo"] as? String == "jazz" && left[2].json["id"] as? String == before[1])
        let arrived = try jazzEvents.next(2)
        #expect(arrived.map(\.name) == ["album.added", "album.added"] && arrived.map(\.id) == ["2", "3"])
        #expect(arrived.map { $0.json["movedFrom"] as? String } == ["default", "default"])
        // And one undo of the batch's library takes it all back, in both
        let undo = try RawHTTPClient.request(port: port, method: "POST", path: "/undo")
        #expect(undo.status == 200)
        #expect(try undo.json()["undone"] as? String == "take back a batch of 4 changes")
        #expect(try Routes.ids(port) == before && Routes.ids(port, in: "/libraries/jazz") == [kind])
        #expect(try jazzEvents.next(2).map { $0.json["movedTo"] as? String } == ["default", "default"])
    }

    @Test func limitsAreNamed() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        // More operations than a batch may hold: 422 naming `operations`, nothing applied
        let tooMany = try Self.post(app.port, "/batch", Self.adds(1001, prefix: "Many"))
        #expect(tooMany.status == 422)
        #expect((try tooMany.json()["errors"] as? [[String: Any]])?.first?["field"] as? String == "operations")
        // A body over 4 MiB: 413 from the head, before the body is read (so none is sent here:
        // the server closes the connection after its answer)
        let client = try RawHTTPClient(port: app.port)
        try client.send("POST /batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(5 << 20)\r\n\r\n")
        #expect(try client.readResponse().status == 413)
        // Bad JSON: 400
        #expect(try Self.post(app.port, "/batch", #"{"operations": [}"#).status == 400)
        #expect(try Self.total(app.port) == 5)
        // A library that does not exist: 404
        #expect(try Self.post(app.port, "/libraries/nothere/batch", Self.adds(1, prefix: "X")).status == 404)
    }

    /// A batch is one transaction: killed in the middle of large batches, the server restarts
    /// with whole batches only.
    @Test func aKilledServerKeepsWholeBatchesOnly() throws {
        let directory = TestApp.temporaryDirectory()
        let server = try ServerProcess(arguments: ["--access-log", "off"], dataDirectory: directory)
        let port = server.port
        let stop = Atomic<Bool>(false)
        let sending = DispatchGroup()
        DispatchQueue.global().async(group: sending) {
            var round = 0
            while !stop.load(ordering: .relaxed) {
                _ = try? Self.post(port, "/batch", Self.adds(1000, prefix: "K\(round)"))
                round += 1
            }
        }
        // Once a batch has committed, the next one is on its way: kill the server then.
        #expect(eventually(timeout: .seconds(30)) { ((try? Self.total(port)) ?? 0) > 5 })
        server.signal(SIGKILL)
        _ = server.waitForExit(timeout: 10)
        stop.store(true, ordering: .relaxed)
        sending.wait()
        let restarted = try ServerProcess(arguments: ["--access-log", "off"], dataDirectory: directory)
        defer { restarted.signal(SIGTERM); _ = restarted.waitForExit(timeout: 10) }
        let total = try Self.total(restarted.port)
        #expect(total > 5 && (total - 5) % 1000 == 0, "\(total) albums: a batch was cut")
        let page = try RawHTTPClient.request(port: restarted.port, path: "/albums?limit=1").json()
        #expect(page["version"] as? Int == total - 5 + 1)
        let undo = try RawHTTPClient.request(port: restarted.port, path: "/undo").json()
        #expect(undo["next"] as? String == "take back a batch of 1000 changes")
    }
}
