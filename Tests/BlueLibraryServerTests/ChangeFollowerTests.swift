@testable import BlueLibraryAPI
import AlbumStoreContract
import Foundation
import HTTPServer
import HTTPTestSupport
import Library
import Storage
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryServer

/// The events of a shared database: two instances (registries on shared views of one store),
/// each with its own hubs; instance A's follower publishes what either committed.
@Suite("Events from the change feed", .ownThreads)
struct ChangeFollowerTests {
    let store = InMemoryAlbumStore()
    let hubsA = EventHubs(configuration: .init(), defaultVersion: 0)
    let followerA: ChangeFollower
    let a: Libraries
    let b: Libraries

    init() {
        let hubs = hubsA
        let follower = ChangeFollower(store: SharedStoreView(store), hubs: hubs, wakeup: nil, logger: JSONLogger(level: .error), skipGrace: .zero)
        followerA = follower
        a = Libraries(store: SharedStoreView(store), clock: { Date() }, ids: .random(clock: { Date() })) { library in
            follower.sink(library)
        }
        b = Libraries(store: SharedStoreView(store), clock: { Date() }, ids: .random(clock: { Date() }))
    }

    @Test("another instance's commits arrive in version order with their versions as ids, own ones once")
    func feedToHub() throws {
        let received = RecordingStream()
        hubsA.defaultHub.subscribe(received, resume: .fresh, announce: false)
        let first = try b.defaultLibrary.add(try AlbumInput(title: "One", artist: "A")).album
        _ = try b.defaultLibrary.add(try AlbumInput(title: "Two", artist: "A"))
        _ = try b.defaultLibrary.move(id: first.id, to: 1)
        followerA.catchUp()
        #expect(eventually { received.frames.count == 3 })
        #expect(received.frames.map(\.version) == [1, 2, 3])
        #expect(received.frames.map(\.name) == ["album.added", "album.added", "album.moved"])
        #expect(received.frames[2].json.contains(#""from":0"#) && received.frames[2].json.contains(#""to":1"#))

        // A's own commit: published from the feed by the committing thread, before the add's
        // state.changed (in no feed: published by the facade's sink), and exactly once.
        _ = try a.defaultLibrary.add(try AlbumInput(title: "Three", artist: "A"))
        #expect(eventually { received.frames.count == 5 })
        #expect(received.frames.suffix(2).map(\.name) == ["album.added", "state.changed"])
        #expect(received.frames.suffix(2).map(\.version) == [4, 4])
        followerA.catchUp()
        followerA.catchUp()
        #expect(hubsA.defaultHub.publishedCount == 5, "nothing published twice")
        let versioned = received.frames.filter { $0.name != "state.changed" }
        #expect(versioned.map(\.version) == [1, 2, 3, 4], "nothing published twice")
    }

    @Test("the follower's thread publishes another instance's commits by itself")
    func theThreadPolls() throws {
        let received = RecordingStream()
        hubsA.defaultHub.subscribe(received, resume: .fresh, announce: false)
        followerA.start()
        defer { followerA.stop() }
        _ = try b.defaultLibrary.add(try AlbumInput(title: "One", artist: "A"))
        #expect(eventually { received.frames.contains { $0.name == "album.added" && $0.version == 1 } }, "within the poll interval")
    }

    @Test("versions without a change (a library made again with its id) are announced as library.replaced")
    func gapsAreReplaced() throws {
        let jazz = LibraryID(rawValue: "jazz")
        _ = try b.create(id: jazz)
        _ = try b.facade(jazz).add(try AlbumInput(title: "One", artist: "A"))
        let hub = hubsA.hub(jazz) { 1 }
        let received = RecordingStream()
        hub.subscribe(received, resume: .fresh, announce: false)
        // Deleted and made again between two passes (another instance): the follower never
        // saw it gone.
        try b.delete(jazz, force: true)
        _ = try b.create(id: jazz)  // version 2, no change
        _ = try b.facade(jazz).add(try AlbumInput(title: "Two", artist: "A"))  // version 3
        followerA.catchUp()
        #expect(eventually { received.frames.count == 2 })
        #expect(received.frames.map(\.name) == ["library.replaced", "album.added"])
        #expect(received.frames.map(\.version) == [2, 3])
    }

    @Test("a library found deleted has its hub removed and its streams ended; made again, it gets a new hub")
    func aDeletedLibraryEndsItsStreams() throws {
        let jazz = LibraryID(rawValue: "jazz")
        _ = try b.create(id: jazz)
        _ = try b.facade(jazz).add(try AlbumInput(title: "One", artist: "A"))
        let hub = hubsA.hub(jazz) { 1 }
        let received = RecordingStream()
        hub.subscribe(received, resume: .fresh, announce: false)
        try b.delete(jazz, force: true)
        followerA.catchUp()
        #expect(followerA.isKnownDeleted(jazz), "a deleted library is no longer read")
        #expect(hubsA.existing(jazz) == nil)
        #expect(eventually { received.endings.withLock { $0 } == ["deleted"] })
        // Made again (version 2) with an album (version 3): a new subscriber's hub starts at
        // the version then and gets only what comes after it.
        _ = try b.create(id: jazz)
        _ = try b.facade(jazz).add(try AlbumInput(title: "Two", artist: "A"))
        let again = RecordingStream()
        hubsA.hub(jazz) { 3 }.subscribe(again, resume: .fresh, announce: false)
        followerA.revive(jazz)
        _ = try b.facade(jazz).add(try AlbumInput(title: "Three", artist: "A"))  // version 4
        followerA.catchUp()
        #expect(eventually { again.frames.count == 1 })
        #expect(again.frames.map(\.version) == [4], "nothing of the old hub's versions is published to the new one")
        #expect(received.frames.isEmpty)
    }
}

extension ChangeFollowerTests {
    @Test("another instance's state.changed waits for its version's own event")
    func relayedStateWaitsForItsVersion() throws {
        let received = RecordingStream()
        hubsA.defaultHub.subscribe(received, resume: .fresh, announce: false)
        _ = try b.defaultLibrary.add(try AlbumInput(title: "One", artist: "A"))
        let version: Int64 = 1  // the fresh store's first commit
        // B's state.changed arrives (NOTIFY) before A's follower has read B's commit.
        followerA.publishRelayed([RelayedEvent(
            instance: "b", library: "default", name: "state.changed", version: version,
            json: #"{"client":"x","id":null,"index":0,"version":\#(version)}"#)])
        #expect(hubsA.defaultHub.publishedCount == 0, "published before album.added of its version")
        #expect(hubsA.defaultHub.window.latest == 0)
        followerA.catchUp()
        #expect(eventually { received.frames.count == 2 })
        #expect(received.frames.map(\.name) == ["album.added", "state.changed"])
        #expect(received.frames.map(\.version) == [version, version])
        // Later ones of a published version go out at once.
        followerA.publishRelayed([RelayedEvent(
            instance: "b", library: "default", name: "state.changed", version: version,
            json: #"{"client":"y","id":null,"index":0,"version":\#(version)}"#)])
        #expect(eventually { received.frames.count == 3 })
    }

    @Test("an own commit with nobody subscribed: its state.changed is not in the ring before its version's event")
    func ownStateWaitsWithoutSubscribers() throws {
        _ = try a.defaultLibrary.add(try AlbumInput(title: "One", artist: "A"))
        let version: Int64 = 1  // the fresh store's first commit
        // Nobody listened at the commit: the follower's thread (not started here) was woken.
        // A client that now resumes from the state event's id would have lost album.added.
        let resumed = RecordingStream()
        hubsA.defaultHub.subscribe(resumed, resume: .after(0), announce: false)
        #expect(hubsA.defaultHub.publishedCount == 0, "state.changed is in the ring before album.added")
        followerA.catchUp()
        #expect(eventually { resumed.frames.count == 2 })
        #expect(resumed.frames.map(\.name) == ["album.added", "state.changed"])
        #expect(resumed.frames.map(\.version) == [version, version])
    }

    @Test("a pass of one library never waits for a pass of another; a commit leaves a running pass of its library to read again")
    func passesArePerLibrary() throws {
        let jazz = LibraryID(rawValue: "jazz")
        _ = try b.create(id: jazz)
        let jazzHub = hubsA.hub(jazz) { 0 }
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let entry = followerA.followedEntry(jazz)
        Thread {
            entry.pass.withLock { _ in
                holding.signal()
                release.wait()
            }
        }.start()
        holding.wait()
        let received = RecordingStream()
        hubsA.defaultHub.subscribe(received, resume: .fresh, announce: false)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            // default's commit, with a subscriber: caught up on this thread while jazz's pass runs.
            _ = try? self.a.defaultLibrary.add(try AlbumInput(title: "One", artist: "A"))
            // jazz's own commit finds jazz's pass running: it does not wait for it.
            self.followerA.catchUp(jazz, hub: jazzHub)
            done.signal()
        }
        let finished = done.wait(timeout: .now() + 20)
        release.signal()
        #expect(finished == .success, "a catch-up waited for another pass")
        #expect(eventually { received.frames.contains { $0.name == "album.added" } }, "delivered by the hub's thread")
        let askedAgain = entry.again.load(ordering: .sequentiallyConsistent)
        #expect(askedAgain, "the running pass is asked to read once more")
    }

    @Test("a hub nobody listens to jumps to the library's version instead of reading the feed; a stream starts there")
    func unsubscribedHubsSkipTheFeed() throws {
        for index in 0..<3 { _ = try b.defaultLibrary.add(try AlbumInput(title: "T\(index)", artist: "A")) }
        followerA.catchUp()
        #expect(hubsA.defaultHub.publishedCount == 0, "nothing read or published for nobody")
        #expect(hubsA.defaultHub.window.evictedThrough == 3 && hubsA.defaultHub.window.latest == 3)
        #expect(hubsA.defaultHub.needsBackfill(after: 1), "a stream resuming from before the jump is filled from the feed")
        #expect(!hubsA.defaultHub.needsBackfill(after: 3))
        let received = RecordingStream()
        hubsA.defaultHub.subscribe(received, resume: .fresh, announce: false)
        _ = try b.defaultLibrary.add(try AlbumInput(title: "T3", artist: "A"))
        followerA.catchUp()
        #expect(eventually { received.frames.count == 1 })
        #expect(received.frames.map(\.version) == [4], "only what came after the jump, read from the feed")
        // A hub whose last subscriber left less than the grace ago keeps its frames.
        let jazz = LibraryID(rawValue: "jazz")
        _ = try b.create(id: jazz)
        let jazzHub = hubsA.hub(jazz) { 0 }
        _ = try b.facade(jazz).add(try AlbumInput(title: "One", artist: "A"))
        #expect(!jazzHub.skipWhileUnsubscribed(to: 1, after: .seconds(3600)), "a hub made a moment ago is within the grace")
        #expect(!hubsA.defaultHub.skipWhileUnsubscribed(to: 9, after: .zero), "never while a stream listens")
    }

    @Test("a backlog longer than one read is published whole, in order")
    func longBacklog() throws {
        let received = RecordingStream()
        hubsA.defaultHub.subscribe(received, resume: .fresh, announce: false)
        let count = ChangeFollower.batch * 2 + 10
        for index in 0..<count { _ = try b.defaultLibrary.add(try AlbumInput(title: "T\(index)", artist: "A")) }
        followerA.catchUp()
        #expect(eventually { received.frames.count == count })
        #expect(received.frames.map(\.version) == (1...Int64(count)).map { $0 })
    }
}

/// An event stream that records what a hub sends it, one write (a batch of frames) at a time.
final class RecordingStream: EventStreamSink {
    private let received = Mutex<[[EventHub.Frame]]>([])
    /// When set, the first write waits for it (the hub's thread is then held inside a round).
    private let holdFirstWrite: DispatchSemaphore?
    /// Signalled when the first write has begun.
    let firstWriteBegan = DispatchSemaphore(value: 0)

    init(holdFirstWrite: DispatchSemaphore? = nil) {
        self.holdFirstWrite = holdFirstWrite
    }

    var frames: [EventHub.Frame] { received.withLock { $0.flatMap { $0 } } }
    /// The frames of each write, in order.
    var writes: [[EventHub.Frame]] { received.withLock { $0 } }

    var sharedWriter: HTTPStreamWriter? { nil }

    func send(_ frames: [EventHub.Frame]) -> Bool {
        let first = received.withLock { writes in
            defer { writes.append(frames) }
            return writes.isEmpty
        }
        if first {
            firstWriteBegan.signal()
            holdFirstWrite?.wait()
        }
        return true
    }
    func comment(_ bytes: [UInt8]) {}
    func heartbeat() {}
    func serverShutdown() { endings.withLock { $0.append("shutdown") } }
    func libraryDeleted() { endings.withLock { $0.append("deleted") } }
    func onClose(_ handler: @escaping @Sendable () -> Void) {}
    /// How the hub ended the stream ("shutdown", "deleted"), in order.
    let endings = Mutex<[String]>([])
}
