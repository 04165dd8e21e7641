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
        // The server's queue limit alone (kernel buffers autotuned, no unsent-bytes limit: the
        // readers lag by rounds of 512 KiB; EventSendBufferTests covers the cap).
        let app = try TestApp.make {
            $0.limits.maxQueuedStreamBytes = 32 * 1024
            $0.limits.streamSendBufferBytes = 0
            $0.limits.maxUnsentStreamBytes = 1 << 30
        }
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

    /// When the next round may start: at once when no request competed or the round cost under
    /// a millisecond; otherwise paced by max(cpu, wall), and never more than
    /// `maxCoalescingDelay` after the round ended (the loops' CPU, in parallel, can exceed it).
    @Test func roundsPauseOnlyWhileRequestsCompete() {
        let configuration = EventHub.Configuration(fanOutShare: 0.1, maxCoalescingDelay: .milliseconds(500))
        let began = ContinuousClock.now
        // A costly round on an otherwise idle server: no pause.
        #expect(configuration.nextRound(began: began, ended: began + .milliseconds(80), cpu: .milliseconds(80), requests: 0)
            == began + .milliseconds(80))
        // A cheap round (a lone subscriber) while requests are served: no pause either.
        #expect(configuration.nextRound(began: began, ended: began + .microseconds(300), cpu: .microseconds(900), requests: 5)
            == began + .microseconds(300))
        // Competing requests: the pause follows the CPU when it is the larger...
        #expect(configuration.nextRound(began: began, ended: began + .milliseconds(2), cpu: .milliseconds(4), requests: 1)
            == began + .milliseconds(40))
        // ...and the wall time when the round waited behind busy loops.
        #expect(configuration.nextRound(began: began, ended: began + .milliseconds(20), cpu: .milliseconds(1), requests: 1)
            == began + .milliseconds(200))
        // Two loops' CPU is twice the round's wall time: the wait after the round still ends
        // within maxCoalescingDelay.
        let ended = began + .milliseconds(300)
        #expect(configuration.nextRound(began: began, ended: ended, cpu: .milliseconds(600), requests: 1)
            == ended + .milliseconds(500))
    }

    /// A lone subscriber on an otherwise idle server gets each event at once, one after the
    /// other, even with pacing that would hold a round for a minute after it (fanOutShare
    /// 1e-6): no request competes and the rounds cost microseconds.
    @Test func aLoneSubscriberOnAnIdleServerIsNeverHeldBack() throws {
        let app = try TestApp.make { $0.events = EventHub.Configuration(fanOutShare: 1e-6, maxCoalescingDelay: .seconds(60)) }
        app.start()
        defer { app.shutdown() }
        let subscriber = try SSEClient(port: app.port)
        let start = app.events.window.latest
        for n in 1...5 {
            app.events.publish(name: "test.\(n)", json: "{}", version: start + Int64(n))
            // The client gives up after 10 s; a paced round would come after a minute.
            let event = try #require(try subscriber.next())
            #expect(event.name == "test.\(n)")
        }
        #expect(eventually { app.events.statistics.batches == 5 })
    }

    /// A fan-out whose loop does not run (wedged here by a task that waits) gives up after its
    /// limit: it logs, drops the stream (closed, the hub forgets it) and returns; once the loop
    /// runs again the connection is closed.
    @Test func aFanOutTheLoopsDoNotRunIsDroppedAfterItsLimit() throws {
        let logged = Mutex<[String]>([])
        let app = try TestApp.make(logSink: { line in logged.withLock { $0.append(String(decoding: line, as: UTF8.self)) } })
        app.start()
        defer { app.shutdown() }
        let subscriber = try SSEClient(port: app.port)
        let writer = try #require(app.events.sharedWriters.first)
        let release = DispatchSemaphore(value: 0)
        let wedged = DispatchSemaphore(value: 0)
        writer.loop.execute { _ in
            wedged.signal()
            release.wait()
        }
        wedged.wait()
        let report = HTTPStreamWriter.fanOut(HTTPStreamPayload(Array("data: x\n\n".utf8)), to: [writer],
                                             limit: .milliseconds(200), checkEvery: .milliseconds(20))
        release.signal()
        #expect(!report.completed)
        #expect(report.writes == 1)
        #expect(report.dropped == [0])
        #expect(writer.isClosed)
        #expect(eventually { app.events.subscriberCount == 0 })
        #expect(logged.withLock { $0.contains { $0.contains("did not write a stream payload within") } })
        // The loop closes the connection once it runs: the stream ends (cut short, or at its
        // end), rather than the client timing out.
        var ending = "end"
        do { while try subscriber.next() != nil {} } catch { ending = "\(error)" }
        #expect(!ending.contains("timed out"), "the dropped stream stayed open: \(ending)")
    }

    /// `fanOut` on an event loop would wait for itself: it stops the process at once.
    @Test func aFanOutOnAnEventLoopIsAPreconditionFailure() async {
        await #expect(processExitsWith: .failure) {
            let app = try TestApp.make()
            app.start()
            let subscriber = try SSEClient(port: app.port)
            let writer = try #require(app.events.sharedWriters.first)
            let returned = DispatchSemaphore(value: 0)
            writer.loop.execute { _ in
                _ = HTTPStreamWriter.fanOut(HTTPStreamPayload([0x61]), to: [])
                returned.signal()
            }
            // Without the check the call returns (nothing to wait for here) and the process
            // ends cleanly.
            _ = returned.wait(timeout: .now() + .seconds(30))
            withExtendedLifetime(subscriber) {}
        }
    }

    /// A fan-out's payload is queued as a chunk of its own, so a lagging stream keeps a
    /// reference to the shared bytes rather than a private copy joined to its queue.
    @Test func aSharedPayloadIsQueuedWithoutACopy() {
        let payload = HTTPStreamPayload(Array(repeating: 0x61, count: 1000))
        var queue = OutputQueue()
        queue.append(Array("unsent".utf8))
        queue.appendShared(payload.chunk)
        queue.append(Array("next".utf8))
        queue.appendShared(payload.chunk)
        #expect(queue.chunks.count == 4)
        #expect(queue.queuedBytes == 6 + 4 + 2 * payload.chunk.count)
        let storage = payload.chunk.withUnsafeBufferPointer { $0.baseAddress }
        for index in [1, 3] {
            guard case let .bytes(bytes, offset, _) = queue.chunks[index] else {
                Issue.record("chunk \(index) is not bytes")
                continue
            }
            #expect(offset == 0)
            #expect(bytes.withUnsafeBufferPointer { $0.baseAddress } == storage, "chunk \(index) is a copy")
        }
        // Small writes still join one another.
        queue.append(Array("a".utf8))
        queue.append(Array("b".utf8))
        #expect(queue.chunks.count == 5)
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
