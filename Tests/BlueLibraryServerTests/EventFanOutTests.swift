import BlueLibraryTestSupport
import Foundation
import HTTPServer
import HTTPTestSupport
import Library
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryServer
@testable import HTTPServer

/// The fan-out of `GET /events`: events queued while a round is under way go out together in
/// the next one, one write per subscriber (seen as one HTTP chunk holding them all), framed
/// once for every stream.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) final class EventFanOutTests {
    /// The hub's thread is held inside a round (a recording stream's first write waits): what
    /// is published meanwhile reaches that stream in one write.
    @Test func eventsQueuedDuringARoundGoOutTogetherInTheNext() throws {
        let hub = EventHub(version: 0)
        let release = DispatchSemaphore(value: 0)
        let stream = RecordingStream(holdFirstWrite: release)
        hub.subscribe(stream, resume: .fresh, announce: false)
        hub.publish(name: "test.event", json: "{\"n\":0}", version: 1)
        stream.firstWriteBegan.wait()
        for n in 1...10 { hub.publish(name: "test.event", json: "{\"n\":\(n)}", version: Int64(n + 1)) }
        release.signal()
        #expect(eventually { stream.frames.count == 11 })
        #expect(stream.writes.map { $0.map(\.version) } == [[1], Array(2...11)])
        #expect(eventually { hub.statistics.batches == 2 })
        #expect(hub.statistics == FanOutStatistics(batches: 2, events: 11, deliveries: 11, writes: 2, cpu: hub.statistics.cpu))
        hub.shutdown()
    }

    /// 300 subscribers over real sockets (plus one stream over two libraries): the events
    /// published while a round is held arrive at every socket in one chunk, in order; /metrics
    /// counts one write per subscriber and round, and fewer writes than deliveries.
    @Test func manySubscribersGetEachBatchInOneChunk() throws {
        let app = try TestApp.make { $0.eventLoops = 2 }
        app.start()
        defer { app.shutdown() }
        try LibraryRouteTests.createLibrary(app.port, "jazz")
        let subscribers = try (0..<300).map { _ in try SSEClient(port: app.port) }
        let multi = try SSEClient(port: app.port, query: "?library=default&library=jazz")
        #expect(app.events.subscriberCount == 301)
        // A recording stream on the same hub holds the hub's thread in the first round.
        let release = DispatchSemaphore(value: 0)
        let holder = RecordingStream(holdFirstWrite: release)
        app.events.subscribe(holder, resume: .fresh, announce: false)
        let start = app.events.window.latest
        app.events.publish(name: "test.first", json: "{}", version: start + 1)
        holder.firstWriteBegan.wait()
        let burst = 25
        for n in 0..<burst { app.events.publish(name: "test.burst", json: "{\"n\":\(n)}", version: start + 2 + Int64(n)) }
        release.signal()
        let expected = (1...Int64(burst + 1)).map { String(start + $0) }
        for subscriber in subscribers {
            let first = try #require(try subscriber.nextChunk())
            #expect(SSEClient.parse(first).map(\.name) == ["test.first"])
            let second = try #require(try subscriber.nextChunk())
            let events = SSEClient.parse(second)
            #expect(events.count == burst, "the burst came in \(events.count) of \(burst) events in the second chunk")
            #expect(([SSEClient.parse(first)[0]] + events).compactMap(\.id) == expected)
        }
        // The stream over two libraries gets the same events (its own ids) in one write too.
        let multiFirst = try #require(try multi.nextChunk())
        #expect(SSEClient.parse(multiFirst).map(\.name) == ["test.first"])
        let multiSecond = SSEClient.parse(try #require(try multi.nextChunk()))
        #expect(multiSecond.map(\.name) == Array(repeating: "test.burst", count: burst))
        #expect(multiSecond.last?.id?.hasPrefix("default:\(start + Int64(burst + 1)),jazz:") == true)

        let statistics = app.eventHubs.statistics
        #expect(statistics.batches >= 2)
        #expect(statistics.writes < statistics.deliveries)
        let metrics = try LibraryRouteTests.request(app.port, "GET", "/metrics").text
        for name in ["batches", "events", "deliveries", "writes", "cpu_seconds"] {
            #expect(metrics.contains("bluelibrary_event_fanout_\(name)_total "), "no \(name) counter")
        }
    }

    /// A subscriber that stops reading among several that read: it is dropped once its queue is
    /// full, the others get every event in order, and publishing never waits for it.
    @Test func aStalledSubscriberIsDroppedAndTheReadersGetEverything() throws {
        let app = try TestApp.make { $0.limits.maxQueuedStreamBytes = 32 * 1024 }
        app.start()
        defer { app.shutdown() }
        let stalled = try SSEClient(port: app.port, receiveBuffer: 4096)
        let readers = try (0..<8).map { _ in try SSEClient(port: app.port) }
        #expect(app.events.subscriberCount == 9)
        let seen = Mutex<[[Int]]>(Array(repeating: [], count: readers.count))
        let finished = Mutex(0)
        for (index, reader) in readers.enumerated() {
            Thread {
                while let event = try? reader.next(), event.name != "test.end" {
                    if let n = Int(event.name.dropFirst("test.".count)) { seen.withLock { $0[index].append(n) } }
                }
                finished.withLock { $0 += 1 }
            }.start()
        }
        let padding = "{\"padding\":\"" + String(repeating: "x", count: 32 * 1024) + "\"}"
        var published = 0
        // Rounds of 16 events of 32 KiB; each round waits until every reader has it (they keep
        // up), while the stalled one's queue passes 32 KiB and it is dropped.
        let dropped = eventually(timeout: .seconds(60), pollingEvery: .milliseconds(1)) {
            for _ in 0..<16 {
                published += 1
                app.events.publish(name: "test.\(published)", json: padding)
            }
            let target = published
            let kept = eventually(timeout: .seconds(30)) { seen.withLock { $0.allSatisfy { $0.count >= target } } }
            return !kept || app.events.subscriberCount < 9
        }
        #expect(dropped, "the stalled subscriber was not dropped after \(published) events")
        app.events.publish(name: "test.end", json: "{}")
        #expect(eventually(timeout: .seconds(60)) { finished.withLock { $0 } == readers.count })
        #expect(app.events.subscriberCount == 8, "only the stalled subscriber is dropped")
        for received in seen.withLock({ $0 }) {
            #expect(received.elementsEqual(1...published), "a reader got \(received.count) of \(published) events")
        }
        withExtendedLifetime(stalled) {}
    }

    @Test func roundsArePacedToTheirShareOfTheCPU() {
        let configuration = EventHub.Configuration(fanOutShare: 0.1, maxCoalescingDelay: .milliseconds(250))
        #expect(configuration.pause(afterCost: .zero) == .zero)
        #expect(configuration.pause(afterCost: .milliseconds(1)) == .milliseconds(9))
        #expect(configuration.pause(afterCost: .milliseconds(100)) == .milliseconds(250))
        #expect(EventHub.Configuration(fanOutShare: 1).pause(afterCost: .seconds(1)) == .zero)
    }

    @Test func aPayloadIsFramedOnceAsAChunk() {
        let payload = HTTPStreamPayload(Array("data: x\n\n".utf8))
        #expect(payload.count == 9)
        #expect(payload.bytes == Array("data: x\n\n".utf8))
        #expect(payload.chunk == Array("9\r\ndata: x\n\n\r\n".utf8))
        let large = HTTPStreamPayload(Array(repeating: 0x61, count: 300))
        #expect(large.chunk.prefix(5) == Array("12c\r\n".utf8)[...])
        #expect(large.chunk.suffix(2) == [0x0D, 0x0A])
        #expect(large.chunk.count == 5 + 300 + 2)
    }
}
