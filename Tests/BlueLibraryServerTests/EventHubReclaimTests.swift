#if canImport(Glibc)
import Glibc
#endif
@testable import BlueLibraryServer
import BlueLibraryTestSupport
import Essentials
import Foundation
import HTTPTestSupport
import Library
import Synchronization
import TestThreads
import Testing

/// Event hubs share a bounded pool of threads and go away with their library (deleted) or
/// after `--event-hub-idle` without subscribers.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads)
struct EventHubReclaimTests {
    // MARK: - In process: idleness by a manual clock, no waiting

    @Test func anIdleHubIsRemovedAfterTheIdleTimeAndALateSubscriberReachesTheNewHub() throws {
        let clock = ManualClock()
        let hubs = EventHubs(configuration: .init(), defaultVersion: 0, threads: 1, idleTimeout: .seconds(60), clock: clock)
        defer { hubs.shutdown() }
        let jazz = LibraryID(rawValue: "jazz")
        let old = hubs.hub(jazz) { 7 }
        #expect(hubs.count == 2)

        // Not yet: 59 s without subscribers.
        clock.advance(by: .seconds(59))
        #expect(hubs.reclaimIdle() == 0)
        // A hub with a subscriber stays however long.
        let listened = hubs.hub(LibraryID(rawValue: "rock")) { 3 }
        let stream = RecordingStream()
        listened.subscribe(stream, resume: .fresh, announce: false)
        // Past 60 s: jazz goes, rock stays, default's stays.
        clock.advance(by: .seconds(2))
        #expect(hubs.reclaimIdle() == 1)
        clock.advance(by: .seconds(600))
        #expect(hubs.reclaimIdle() == 0)
        #expect(hubs.existing(jazz) == nil)
        #expect(hubs.count == 2)

        // A subscription that still holds the old hub lands on the library's new one, which
        // starts where the old one ended, and gets what is published there.
        let late = RecordingStream()
        #expect(old.subscribe(late, resume: .fresh, announce: false) == 7)
        let current = try #require(hubs.existing(jazz))
        #expect(current !== old)
        #expect(current.subscriberCount == 1)
        current.publish(name: "album.added", json: "{}", version: 8)
        #expect(eventually { late.frames.map(\.version) == [8] })
    }

    @Test func aDeletedLibrarysHubIsRemovedAndItsStreamsEndWithoutShutdownEvent() throws {
        let hubs = EventHubs(configuration: .init(), defaultVersion: 0, threads: 1)
        defer { hubs.shutdown() }
        let jazz = LibraryID(rawValue: "jazz")
        let hub = hubs.hub(jazz) { 1 }
        let stream = RecordingStream()
        hub.subscribe(stream, resume: .fresh, announce: false)
        hub.publish(name: "album.added", json: "{}", version: 2)

        hubs.libraryDeleted(jazz)

        #expect(hubs.existing(jazz) == nil)
        // What was published still goes out, then the stream ends as deleted.
        #expect(eventually { stream.endings.withLock { $0 } == ["deleted"] })
        #expect(stream.frames.map(\.version) == [2])
        // A late subscription to the old hub ends at once.
        let late = RecordingStream()
        #expect(hub.subscribe(late, resume: .fresh, announce: false) == nil)
        #expect(late.endings.withLock { $0 } == ["deleted"])
    }

    @Test func manyHubsWithSubscribersShareTheConfiguredThreads() throws {
        let hubs = EventHubs(configuration: .init(heartbeat: .milliseconds(5)), defaultVersion: 0, threads: 3)
        defer { hubs.shutdown() }
        var streams: [RecordingStream] = []
        for index in 0..<300 {
            let hub = hubs.hub(LibraryID(rawValue: "lib\(index)")) { 0 }
            let stream = RecordingStream()
            hub.subscribe(stream, resume: .fresh, announce: false)
            hub.publish(name: "album.added", json: "{}", version: 1)
            streams.append(stream)
        }
        #expect(eventually { streams.allSatisfy { $0.frames.count == 1 } })
        #expect(hubs.pool.threadCount <= 3)
        #expect(hubs.pool.threadCount >= 1)
    }

    // MARK: - The real server

    static func request(_ port: Int, _ method: String, _ path: String, json: String? = nil) throws -> RawHTTPClient.Response {
        let headers = json == nil ? [:] : ["Content-Type": "application/json"]
        return try RawHTTPClient.request(port: port, method: method, path: path, headers: headers, body: Array((json ?? "").utf8))
    }

    /// The names of the threads the server started itself: libdispatch's worker threads (its
    /// queues: signals, the memory trimmer's 1/s pass) and libvips' pool come and go with their
    /// own load, so a count that includes them moves by one or two between any two looks.
    static func ownThreads(of pid: Int32) throws -> [String] {
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        return tasks.compactMap { task in
            guard let name = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8) else { return nil }
            let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
            return trimmed.contains("qos") || trimmed.hasPrefix("libvips") ? nil : trimmed
        }.sorted()
    }

    /// Creates `count` libraries, opens a stream on each, deletes them and checks each stream
    /// ends (a complete chunked response).
    static func cycle(_ port: Int, prefix: String, count: Int) throws {
        var streams: [RawHTTPClient] = []
        for index in 0..<count {
            let id = "\(prefix)-\(index)"
            #expect(try request(port, "POST", "/libraries", json: #"{"id":"\#(id)","name":"\#(id)"}"#).status == 201)
            let stream = try RawHTTPClient(port: port)
            try stream.send("GET /libraries/\(id)/events HTTP/1.1\r\nHost: test\r\n\r\n")
            streams.append(stream)
        }
        for stream in streams {
            let head = try stream.readResponse(isHead: true)
            #expect(head.status == 200)
            #expect(try stream.readChunk().map { String(decoding: $0, as: UTF8.self) } == ": subscribed\n\n")
        }
        for index in 0..<count {
            #expect(try request(port, "DELETE", "/libraries/\(prefix)-\(index)").status == 204)
        }
        for stream in streams {
            // The deleted library's stream ends: its last chunk, no server.shutdown.
            var chunks: [String] = []
            while let chunk = try stream.readChunk() { chunks.append(String(decoding: chunk, as: UTF8.self)) }
            #expect(!chunks.contains { $0.contains("server.shutdown") }, "\(chunks)")
        }
    }

    @Test func creatingSubscribingAndDeletingLibrariesLeavesTheThreadCountWhereItWas() throws {
        let server = try ServerProcess(arguments: ["--access-log", "off"], dataDirectory: TestApp.temporaryDirectory())
        let pid = server.process.processIdentifier
        // Whatever starts on first use (workers, the event threads) starts here.
        try Self.cycle(server.port, prefix: "warm", count: 20)
        let start = try Self.ownThreads(of: pid)
        // The event threads start one at a time as rounds find the started ones busy: those
        // not started yet may still start, never more.
        let unstarted = try MetricsTests.scrape(server.port).value("bluelibrary_event_hub_thread_limit")
            - MetricsTests.scrape(server.port).value("bluelibrary_event_hub_threads")

        for round in 0..<2 {
            try Self.cycle(server.port, prefix: "r\(round)", count: 500)
        }

        let metrics = try MetricsTests.scrape(server.port)
        #expect(metrics.value("bluelibrary_event_hubs") == 1, "only default's hub is left")
        #expect(metrics.value("bluelibrary_event_hub_threads") <= metrics.value("bluelibrary_event_hub_thread_limit"))
        #expect(metrics.value("bluelibrary_event_hub_thread_limit") == 2)
        let end = try Self.ownThreads(of: pid)
        #expect(end.count <= start.count + Int(unstarted), "threads: \(start) before, \(end) after 1,000 subscribed and deleted libraries")
    }
}
