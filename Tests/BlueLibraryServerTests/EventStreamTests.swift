#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryTestSupport
import Foundation
import HTTPServer
import HTTPTestSupport
import Library
import TestThreads
import Testing

@testable import BlueLibraryServer

struct StreamEnded: Error {}

/// One parsed SSE frame (comments are skipped by `SSEClient.next`).
struct SSEEvent: Equatable, CustomStringConvertible {
    var id: String?
    var name: String
    var data: String

    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any]) ?? [:]
    }

    var description: String { "\(id ?? "-") \(name) \(data)" }
}

/// A `GET /events` subscriber over a raw socket: each chunk of the body is one frame.
final class SSEClient: @unchecked Sendable {
    let client: RawHTTPClient
    let head: RawHTTPClient.Response

    /// Connects and waits until the subscription is live (its `: subscribed` comment), so
    /// nothing published afterwards can be missed. Replayed frames before it are kept.
    init(port: Int, lastEventID: String? = nil, path: String = "/events", query: String = "", receiveBuffer: Int? = nil) throws {
        client = try RawHTTPClient(port: port)
        if let receiveBuffer {
            var size = Int32(receiveBuffer)
            setsockopt(client.fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var request = "GET \(path)\(query) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        if let lastEventID { request += "Last-Event-ID: \(lastEventID)\r\n" }
        try client.send(request + "\r\n")
        head = try client.readResponse(isHead: true)
        while let frame = try client.readChunk() {
            let text = String(decoding: frame, as: UTF8.self)
            if text == ": subscribed\n\n" { return }
            pending.append(contentsOf: Self.parse(text))
        }
        throw StreamEnded()
    }

    /// Events that arrived before `: subscribed` (a replay).
    private(set) var pending: [SSEEvent] = []
    private(set) var comments: [String] = []

    /// The next event (replayed ones first); nil when the stream ends.
    func next() throws -> SSEEvent? {
        if !pending.isEmpty { return pending.removeFirst() }
        while let frame = try client.readChunk() {
            let text = String(decoding: frame, as: UTF8.self)
            let events = Self.parse(text)
            if events.isEmpty {
                comments.append(text)
                continue
            }
            pending = Array(events.dropFirst())
            return events[0]
        }
        return nil
    }

    func next(_ count: Int) throws -> [SSEEvent] {
        try (0..<count).map { _ in try #require(try next()) }
    }

    /// The raw next chunk (heartbeat checks).
    func nextChunk() throws -> String? {
        try client.readChunk().map { String(decoding: $0, as: UTF8.self) }
    }

    static func parse(_ text: String) -> [SSEEvent] {
        text.components(separatedBy: "\n\n").compactMap { block -> SSEEvent? in
            var event = SSEEvent(id: nil, name: "message", data: "")
            var sawField = false
            for line in block.split(separator: "\n") where !line.hasPrefix(":") {
                sawField = true
                if line.hasPrefix("id: ") { event.id = String(line.dropFirst(4)) }
                if line.hasPrefix("event: ") { event.name = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { event.data += String(line.dropFirst(6)) }
            }
            return sawField ? event : nil
        }
    }
}

/// `GET /events` over real sockets against the in-process app.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) final class EventStreamTests {
    func request(_ port: Int, _ method: String, _ path: String, json: String? = nil) throws -> RawHTTPClient.Response {
        let headers = json == nil ? [:] : ["Content-Type": "application/json"]
        return try RawHTTPClient.request(port: port, method: method, path: path, headers: headers, body: Array((json ?? "").utf8))
    }

    func addAlbum(_ port: Int, _ title: String) throws -> String {
        let response = try request(port, "POST", "/albums", json: #"{"title": "\#(title)", "artist": "Tester"}"#)
        #expect(response.status == 201)
        return try #require(try response.json()["id"] as? String)
    }

    @Test func headersAndEventsForEveryMutationInOrder() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let stream = try SSEClient(port: app.port)
        #expect(stream.head.status == 200)
        #expect(stream.head.header("Content-Type") == "text/event-stream")
        #expect(stream.head.header("Cache-Control") == "no-cache")
        #expect(stream.head.header("X-Accel-Buffering") == "no")
        #expect(stream.head.header("Transfer-Encoding")?.lowercased() == "chunked")

        // The seeded library is at version 1.
        let id = try addAlbum(app.port, "Fresh")
        let added = try stream.next(2)
        #expect(added.map(\.name) == ["album.added", "state.changed"])
        #expect(added.map(\.id) == ["2", "2"])
        #expect(added[0].json["id"] as? String == id && added[0].json["index"] as? Int == 5 && added[0].json["version"] as? Int == 2)
        #expect(added[1].json["client"] as? String == "default" && added[1].json["id"] as? String == id)

        #expect(try request(app.port, "PATCH", "/albums/\(id)", json: #"{"year": 1999}"#).status == 200)
        let updated = try #require(try stream.next())
        #expect(updated.name == "album.updated" && updated.id == "3")
        #expect(updated.json["id"] as? String == id && updated.json["index"] as? Int == 5 && updated.json["version"] as? Int == 3)

        #expect(try request(app.port, "POST", "/albums/\(id)/move", json: #"{"index": 1}"#).status == 200)
        let moved = try #require(try stream.next())
        #expect(moved.name == "album.moved" && moved.id == "4")
        #expect(moved.json["from"] as? Int == 5 && moved.json["to"] as? Int == 1 && moved.json["index"] as? Int == 1)

        #expect(try request(app.port, "DELETE", "/albums/\(id)").status == 200)
        let deleted = try #require(try stream.next())
        #expect(deleted.name == "album.deleted" && deleted.id == "5")
        #expect(deleted.json["id"] as? String == id && deleted.json["index"] as? Int == 1)

        #expect(try request(app.port, "POST", "/undo").status == 200)
        let undone = try stream.next(2)
        #expect(undone.map(\.name) == ["album.added", "state.changed"])
        #expect(undone[0].json["id"] as? String == id && undone[0].json["index"] as? Int == 1 && undone[0].id == "6")

        // Saving a state does not bump the version: the event carries the current one.
        #expect(try request(app.port, "PUT", "/state?client=phone", json: #"{"currentAlbumIndex": 2}"#).status == 200)
        let state = try #require(try stream.next())
        #expect(state.name == "state.changed" && state.id == "6")
        #expect(state.json["client"] as? String == "phone" && state.json["index"] as? Int == 2)

        let archive = try request(app.port, "GET", "/archive")
        #expect(archive.status == 200)
        #expect(try RawHTTPClient.request(
            port: app.port, method: "PUT", path: "/archive", headers: ["Content-Type": "application/json"], body: archive.body).status == 200)
        let replaced = try #require(try stream.next())
        #expect(replaced.name == "library.replaced" && replaced.id == "7" && replaced.data == #"{"version":7}"#)

        // Anything else (cover events, forwarded by the lead) goes out the same way.
        app.events.publish(name: "cover.loaded", json: #"{"url":"https://example.com/a.png"}"#)
        let cover = try #require(try stream.next())
        #expect(cover.name == "cover.loaded" && cover.id == "7")
    }

    @Test func resumesWithLastEventIDFromTheReplayBuffer() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        do {
            let stream = try SSEClient(port: app.port)
            _ = try addAlbum(app.port, "One")
            #expect(try stream.next(2).map(\.id) == ["2", "2"])
        }
        // Missed while disconnected:
        let two = try addAlbum(app.port, "Two")
        #expect(try request(app.port, "DELETE", "/albums/\(two)").status == 200)

        let resumed = try SSEClient(port: app.port, lastEventID: "2")
        let missed = try resumed.next(3)
        #expect(missed.map(\.name) == ["album.added", "state.changed", "album.deleted"])
        #expect(missed.map(\.id) == ["3", "3", "4"])
        // ... then live events continue after them.
        _ = try addAlbum(app.port, "Three")
        #expect(try resumed.next()?.id == "5")

        // The query parameter works the same, for clients that cannot set the header.
        let byQuery = try SSEClient(port: app.port, query: "?lastEventId=4")
        #expect(try byQuery.next(2).map(\.id) == ["5", "5"])
        // Up to date: nothing replayed.
        let current = try SSEClient(port: app.port, lastEventID: "5")
        _ = try addAlbum(app.port, "Four")
        #expect(try current.next()?.id == "6")
    }

    @Test func aGapOlderThanTheBufferIsFilledFromTheChangeFeed() throws {
        let app = try TestApp.make { $0.events.replayCapacity = 3 }
        app.start()
        defer { app.shutdown() }
        for index in 0..<3 { _ = try addAlbum(app.port, "A\(index)") } // versions 2, 3, 4: six events
        // Only the last three events (3's state.changed, 4's two) are kept; 3 comes from the feed
        // (its state.changed is in no feed), then the kept ones after it.
        let old = try SSEClient(port: app.port, lastEventID: "2")
        #expect(try old.next(3).map { "\($0.id ?? "-") \($0.name)" } == ["3 album.added", "4 album.added", "4 state.changed"])
        _ = try addAlbum(app.port, "Live")
        #expect(try old.next()?.id == "5", "then live events, none twice")
    }

    @Test func startsWithLibraryOutdatedWhenTheGapIsTooOld() throws {
        // The feed keeps only the newest change: a gap older than the buffer cannot be filled.
        // (A negative age makes every change old at once, so only the count decides; with age
        // zero, changes recorded in the same millisecond as the newest were kept.)
        let app = try TestApp.make {
            $0.events.replayCapacity = 3
            $0.changeRetention = ChangeRetention(age: .seconds(-1), count: 1)
        }
        app.start()
        defer { app.shutdown() }
        for index in 0..<3 { _ = try addAlbum(app.port, "A\(index)") } // versions 2, 3, 4: six events
        // Only the last three events (4's and 3's state.changed) are kept: 2 cannot be resumed.
        let old = try SSEClient(port: app.port, lastEventID: "2")
        let first = try #require(try old.next())
        #expect(first.name == "library.outdated")
        #expect(first.id == "4" && first.json["version"] as? Int == 4 && first.json["lastEventId"] as? String == "2")
        // 3 can: everything after it is still there.
        let recent = try SSEClient(port: app.port, lastEventID: "3")
        #expect(try recent.next(2).map(\.name) == ["album.added", "state.changed"])
        // Ids that are no version of this library (another database, garbage) are outdated too.
        #expect(try SSEClient(port: app.port, lastEventID: "99").next()?.name == "library.outdated")
        #expect(try SSEClient(port: app.port, lastEventID: "yesterday").next()?.name == "library.outdated")
    }

    /// A version newer than the library (the client holds another library's or database's
    /// state) is neither resumed nor refused: where `GET /changes?since=` answers 400, the
    /// stream starts with `library.outdated` quoting the id, then goes on live. The same for
    /// the header, the query parameter and one library of a multi-library id.
    @Test func aFutureIDStartsWithLibraryOutdatedThenGoesLive() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        for index in 0..<2 { _ = try addAlbum(app.port, "A\(index)") } // versions 2, 3
        #expect(try request(app.port, "GET", "/changes?since=4").status == 400)
        let header = try SSEClient(port: app.port, lastEventID: "4")
        #expect(header.head.status == 200)
        let first = try #require(try header.next())
        #expect(first.name == "library.outdated" && first.id == "3")
        #expect(first.json["lastEventId"] as? String == "4" && first.json["version"] as? Int == 3)
        let query = try SSEClient(port: app.port, query: "?lastEventId=1000")
        let fromQuery = try #require(try query.next())
        #expect(fromQuery.name == "library.outdated" && fromQuery.json["lastEventId"] as? String == "1000")
        let vector = try SSEClient(port: app.port, lastEventID: "default:4", query: "?library=default")
        let fromVector = try #require(try vector.next())
        #expect(fromVector.name == "library.outdated" && fromVector.json["library"] as? String == "default")
        #expect(fromVector.json["version"] as? Int == 3)
        // Nothing replayed, nothing lost: the next event of each is the next change.
        _ = try addAlbum(app.port, "Live")
        #expect(try header.next().map { "\($0.id ?? "-") \($0.name)" } == "4 album.added")
        #expect(try query.next().map { "\($0.id ?? "-") \($0.name)" } == "4 album.added")
        #expect(try vector.next()?.name == "album.added")
    }

    @Test func afterARestartOldIDsResumeFromTheChangeFeed() throws {
        let directory = TestApp.temporaryDirectory()
        do {
            let app = try TestApp.make { $0.dataDirectory = directory }
            app.start()
            _ = try addAlbum(app.port, "Before")
            app.shutdown()
            app.waitUntilStopped()
        }
        let app = try TestApp.make { $0.dataDirectory = directory }
        app.start()
        defer { app.shutdown() }
        let before = try #require(try SSEClient(port: app.port, lastEventID: "1").next())
        #expect(before.name == "album.added" && before.id == "2")  // from the feed, not this process's buffer
        #expect(try SSEClient(port: app.port, lastEventID: "9").next()?.name == "library.outdated")  // newer than the library
        let current = try SSEClient(port: app.port, lastEventID: "2")
        _ = try addAlbum(app.port, "After")
        #expect(try current.next()?.id == "3")
    }

    @Test func heartbeatCommentsKeepIdleStreamsAlive() throws {
        let app = try TestApp.make { $0.events.heartbeat = .milliseconds(100) }
        app.start()
        defer { app.shutdown() }
        let first = try SSEClient(port: app.port)
        let second = try SSEClient(port: app.port)
        #expect(try first.nextChunk() == ": heartbeat\n\n")
        #expect(try first.nextChunk() == ": heartbeat\n\n")
        #expect(try second.nextChunk() == ": heartbeat\n\n")
    }

    @Test func shutdownSendsAFinalEventAndEndsTheStream() throws {
        let app = try TestApp.make()
        app.start()
        let stream = try SSEClient(port: app.port)
        app.shutdown()
        let last = try #require(try stream.next())
        #expect(last.name == "server.shutdown")
        #expect(try stream.next() == nil) // the last chunk: a clean end
        app.waitUntilStopped()
    }

    /// 1,000 open streams: writes go on (a publish only formats and queues the frame; the hub's
    /// thread and the event loops do the fan-out) and every subscriber gets every event in
    /// order. The slowdown is printed for information: timings belong in scripts/bench.
    @Test func aThousandSubscribersEachGetEveryEventInOrder() throws {
        let app = try TestApp.make { $0.eventLoops = 2 }
        app.start()
        defer { app.shutdown() }
        let writes = 40
        func timedHTTPWrites(_ label: String) throws -> Double {
            let start = Date()
            for index in 0..<writes { _ = try addAlbum(app.port, "\(label)\(index)") }
            return Date().timeIntervalSince(start)
        }
        func timedFacadeWrites(_ label: String) throws -> Double {
            let start = Date()
            for index in 0..<writes { _ = try app.facade.add(.init(title: "\(label)\(index)", artist: "Tester")) }
            return Date().timeIntervalSince(start)
        }
        let httpAlone = try timedHTTPWrites("alone")
        let facadeAlone = try timedFacadeWrites("alone")
        let subscribers = try (0..<1000).map { _ in try SSEClient(port: app.port) }
        #expect(app.events.subscriberCount == 1000)
        // HTTP first: the facade's burst below leaves a fan-out backlog behind it.
        let httpWatched = try timedHTTPWrites("watched")
        let facadeWatched = try timedFacadeWrites("watched")
        print("[events] \(writes) writes without / with 1,000 subscribers: facade \(facadeAlone)s / \(facadeWatched)s, HTTP \(httpAlone)s / \(httpWatched)s")
        // Every subscriber got every event, in order.
        let first = 2 + 2 * writes // the seeding, then the unwatched writes
        var expected: [String] = []
        for write in 0..<(2 * writes) {
            let version = String(first + write)
            expected += [version, version]
        }
        for subscriber in subscribers {
            #expect(try subscriber.next(4 * writes).compactMap(\.id) == expected)
        }
    }

    /// A subscriber that never reads is dropped once its queue passes the limit; writes and the
    /// other subscribers carry on.
    @Test func aSlowSubscriberIsDroppedWhileWritesContinue() throws {
        // The server's queue limit alone: the kernel's buffers as autotuned, no unsent-bytes
        // limit (the reader lags by rounds of 640 KiB; EventSendBufferTests covers the cap).
        let app = try TestApp.make {
            $0.limits.maxQueuedStreamBytes = 64 * 1024
            $0.limits.streamSendBufferBytes = 0
            $0.limits.maxUnsentStreamBytes = 1 << 30
        }
        app.start()
        defer { app.shutdown() }
        let slow = try SSEClient(port: app.port, receiveBuffer: 4096)
        let reader = try SSEClient(port: app.port)
        #expect(app.events.subscriberCount == 2)
        let big = "{\"padding\":\"" + String(repeating: "x", count: 32 * 1024) + "\"}"
        let received = ReceivedCount()
        let readerThread = Thread {
            while let event = try? reader.next() {
                if event.name == "test.big" { received.add() }
                if event.name == "album.added" { received.added() }
            }
        }
        readerThread.start()
        var rounds = 0
        // Enough bytes to fill the slow client's socket buffers and then its queue: a round of
        // writes at a time until the hub has dropped the slow subscriber.
        try eventually(timeout: .seconds(30), pollingEvery: .milliseconds(5)) {
            for _ in 0..<20 { app.events.publish(name: "test.big", json: big) }
            _ = try addAlbum(app.port, "during\(rounds)")
            rounds += 1
            return app.events.subscriberCount != 2
        }
        #expect(app.events.subscriberCount == 1, "the slow subscriber was not dropped")
        // Writes still work, and the reading subscriber still gets them.
        _ = try addAlbum(app.port, "after")
        #expect(eventually { received.addedCount >= rounds + 1 })
        #expect(received.addedCount == rounds + 1)
        #expect(received.bigCount == rounds * 20)
        // (Reading what the slow client's kernel buffers still hold would take long through
        // its tiny window; that it left the hub is the proof it was dropped.)
        withExtendedLifetime(slow) {}
    }
}

final class ReceivedCount: @unchecked Sendable {
    private let lock = NSLock()
    private var big = 0
    private var albums = 0
    func add() { lock.withLock { big += 1 } }
    func added() { lock.withLock { albums += 1 } }
    var bigCount: Int { lock.withLock { big } }
    var addedCount: Int { lock.withLock { albums } }
}
