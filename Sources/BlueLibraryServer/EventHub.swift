import Dispatch
import Essentials
import Foundation
import HTTPServer
import Library
import Synchronization

/// The Server-Sent Events hub behind `GET /events`: the facade's `LibraryEventSink` (and,
/// through `publish(name:json:version:)`, anyone else's, such as cover events).
///
/// - Each event is formatted once as an SSE frame (`id: <version>`, `event: <name>`,
///   `data: <json>`) by the publisher, which then only appends it under a short lock. The
///   hub's one thread hands it to every subscriber's `HTTPStreamWriter` (a write only queues
///   bytes for the subscriber's event loop), so neither the writer nor the fan-out ever waits
///   for a client; the server drops a client whose queue passes `maxQueuedStreamBytes` (its
///   stream closes and `onClose` removes it here).
/// - The last `replayCapacity` frames are kept so a client that reconnects with
///   `Last-Event-ID` gets what it missed. When that is impossible (the gap reaches past the
///   buffer, the id is not a version this server knows, or it is newer than the library) the
///   stream starts with `library.outdated`: reload everything.
/// - The same thread sends `: heartbeat` comments to every subscriber, so proxies keep idle
///   streams open. It starts with the first subscriber and ends at `shutdown()`.
///
/// Event ids are library versions. Events that do not bump the version (`state.changed` after
/// `PUT /state`, cover events) carry the current version; on resume only events with a greater
/// version are replayed, so such events published at the version a client last saw are not.
public final class EventHub: LibraryEventSink, Sendable {
    public struct Configuration: Sendable {
        /// How many events are kept for `Last-Event-ID` resumption.
        public var replayCapacity: Int
        /// How often idle streams get a heartbeat comment.
        public var heartbeat: Duration

        public init(replayCapacity: Int = 1000, heartbeat: Duration = .seconds(15)) {
            precondition(replayCapacity >= 0, "replayCapacity must not be negative")
            self.replayCapacity = replayCapacity
            self.heartbeat = heartbeat
        }
    }

    struct Frame {
        let version: Int64
        let bytes: [UInt8]
    }

    /// A frame waiting for the delivery thread; `sequence` orders every published frame.
    struct Pending {
        let sequence: UInt64
        let bytes: [UInt8]
    }

    struct Subscriber {
        let writer: HTTPStreamWriter
        /// Frames before this sequence were replayed (or not wanted) at subscription.
        let firstSequence: UInt64
    }

    private struct State {
        /// A ring of the newest frames: `frames[start...]` then `frames[..<start]` once full.
        var frames: [Frame] = []
        var start = 0
        /// Events up to this version may be missing from `frames` (evicted, or from before
        /// this hub started): resuming from an older id is impossible.
        var evictedThrough: Int64
        /// The newest version published (or the library's version at start).
        var latest: Int64
        /// The sequence number the next published frame gets.
        var nextSequence: UInt64 = 0
        /// Published, not yet handed to the subscribers (only while there are any).
        var pending: [Pending] = []
        var subscribers: [UInt64: Subscriber] = [:]
        var nextSubscriber: UInt64 = 0
        var threadStarted = false
        var shutDown = false

        mutating func append(_ frame: Frame, capacity: Int) {
            latest = max(latest, frame.version)
            guard capacity > 0 else {
                evictedThrough = max(evictedThrough, frame.version)
                return
            }
            if frames.count < capacity {
                frames.append(frame)
            } else {
                evictedThrough = max(evictedThrough, frames[start].version)
                frames[start] = frame
                start = (start + 1) % capacity
            }
        }

        /// The kept frames with a version greater than `version`, oldest first.
        func frames(after version: Int64) -> [Frame] {
            (frames[start...] + frames[..<start]).filter { $0.version > version }
        }
    }

    public let configuration: Configuration
    private let state: Mutex<State>
    /// Wakes the delivery thread (new frames, or shutdown).
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled when the delivery thread has sent its last frames and ended.
    private let stopped = DispatchSemaphore(value: 0)

    static let heartbeatFrame = Array(": heartbeat\n\n".utf8)
    static let shutdownFrame = Array("event: server.shutdown\ndata: {}\n\n".utf8)
    static let subscribedFrame = Array(": subscribed\n\n".utf8)

    /// - Parameter version: the library version when the hub starts; ids older than it cannot
    ///   be resumed.
    public init(configuration: Configuration = Configuration(), version: Int64) {
        self.configuration = configuration
        state = Mutex(State(evictedThrough: version, latest: version))
    }

    /// Open `GET /events` streams.
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    // MARK: - Publishing

    public func publish(_ event: LibraryEvent) {
        publish(name: event.name, json: Self.payload(of: event), version: event.version)
    }

    /// Publishes any event: `json` is the `data` line (one line of JSON); `version` the id,
    /// nil for the newest version published (events that do not change the library).
    ///
    /// Costs the caller one formatting and a short lock: the frames are handed to the
    /// subscribers by the hub's own thread, so a writer never waits for the fan-out.
    public func publish(name: String, json: String, version: Int64? = nil) {
        let signal = state.withLock { state -> Bool in
            let id = version ?? state.latest
            let frame = Frame(version: id, bytes: Self.frame(id: id, name: name, json: json))
            state.append(frame, capacity: configuration.replayCapacity)
            let sequence = state.nextSequence
            state.nextSequence += 1
            guard !state.subscribers.isEmpty, !state.shutDown else { return false }
            state.pending.append(Pending(sequence: sequence, bytes: frame.bytes))
            return state.pending.count == 1
        }
        if signal { wake.signal() }
    }

    // MARK: - Subscribing

    /// Adds the stream of one `GET /events` request. Runs on the connection's event loop.
    ///
    /// - Parameter lastEventID: the client's `Last-Event-ID`, or nil for a fresh subscription.
    func subscribe(_ writer: HTTPStreamWriter, lastEventID: String?) {
        let subscription: (id: UInt64, needsThread: Bool)? = state.withLock { state in
            if state.shutDown {
                writer.write(Self.shutdownFrame)
                return nil
            }
            // Under the lock: the replay is queued before any live frame (the delivery thread
            // takes the lock before writing), and no frame is both replayed and delivered.
            if let lastEventID {
                if let seen = Int64(lastEventID.trimmingASCIIWhitespace()), seen >= state.evictedThrough, seen <= state.latest {
                    for frame in state.frames(after: seen) { writer.write(frame.bytes) }
                } else {
                    writer.write(Self.frame(
                        id: state.latest, name: "library.outdated",
                        json: "{\"lastEventId\":\(JSONString.quoted(lastEventID)),\"version\":\(state.latest)}"))
                }
            }
            // A first frame, so the client knows the subscription is live.
            writer.write(Self.subscribedFrame)
            let id = state.nextSubscriber
            state.nextSubscriber += 1
            state.subscribers[id] = Subscriber(writer: writer, firstSequence: state.nextSequence)
            // Decided here, so a concurrent `shutdown()` knows the thread will run and waits.
            defer { state.threadStarted = true }
            return (id, !state.threadStarted)
        }
        guard let (id, needsThread) = subscription else {
            writer.finish()
            return
        }
        if needsThread { startThread() }
        writer.onClose { [weak self] in
            self?.state.withLock { state in state.subscribers[id] = nil }
        }
    }

    // MARK: - The delivery and heartbeat thread

    /// Starts the thread (once, with the first subscriber).
    private func startThread() {
        let interval = max(1_000_000, Int(clamping: configuration.heartbeat.nanoseconds))
        let thread = Thread { [self] in
            var nextHeartbeat = DispatchTime.now() + .nanoseconds(interval)
            while true {
                if wake.wait(timeout: nextHeartbeat) == .timedOut {
                    sendHeartbeat()
                    nextHeartbeat = DispatchTime.now() + .nanoseconds(interval)
                    continue
                }
                if !deliverPending() { break }
            }
            stopped.signal()
        }
        thread.name = "sse-events"
        thread.start()
    }

    /// Hands every pending frame to the subscribers; false once the hub has shut down (then
    /// every stream has got `server.shutdown` and been finished).
    private func deliverPending() -> Bool {
        let (batch, subscribers, shutDown) = state.withLock { state in
            defer { state.pending = [] }
            return (state.pending, Array(state.subscribers), state.shutDown)
        }
        var closed: [UInt64] = []
        for frame in batch {
            for (id, subscriber) in subscribers where frame.sequence >= subscriber.firstSequence {
                if !subscriber.writer.write(frame.bytes) { closed.append(id) }
            }
        }
        if !closed.isEmpty {
            state.withLock { state in
                for id in closed { state.subscribers[id] = nil }
            }
        }
        if shutDown {
            let last = state.withLock { state in
                defer { state.subscribers = [:] }
                return Array(state.subscribers.values)
            }
            for subscriber in last {
                subscriber.writer.write(Self.shutdownFrame)
                subscriber.writer.finish()
            }
            return false
        }
        return true
    }

    /// Sends one heartbeat comment to every subscriber (the timer's work).
    func sendHeartbeat() {
        let subscribers = state.withLock { state in state.shutDown ? [] : Array(state.subscribers.values) }
        for subscriber in subscribers { subscriber.writer.write(Self.heartbeatFrame) }
    }

    /// Graceful shutdown: what was published is still delivered, then every open stream gets
    /// `event: server.shutdown` and ends; later subscriptions get the same at once. Call before
    /// the HTTP server drains (it waits up to a second for the delivery thread to finish).
    public func shutdown() {
        let running = state.withLock { state -> Bool in
            guard !state.shutDown else { return false }
            state.shutDown = true
            return state.threadStarted
        }
        guard running else { return }
        wake.signal()
        _ = stopped.wait(timeout: .now() + .seconds(1))
    }

    // MARK: - Formatting

    static func frame(id: Int64, name: String, json: String) -> [UInt8] {
        // A data line must not contain a newline; JSON from JSONEncoder or `payload` has none,
        // but a caller's text is split into several data lines to be safe.
        var text = "id: \(id)\nevent: \(name)\n"
        for line in json.split(separator: "\n", omittingEmptySubsequences: false) {
            text += "data: \(line)\n"
        }
        text += "\n"
        return Array(text.utf8)
    }

    /// The `data` of a library event: album id, index and version (and the client for
    /// `state.changed`, `from`/`to` for `album.moved`).
    static func payload(of event: LibraryEvent) -> String {
        switch event {
        case let .albumAdded(id, index, version), let .albumUpdated(id, index, version), let .albumDeleted(id, index, version):
            return "{\"id\":\(JSONString.quoted(id.rawValue)),\"index\":\(index),\"version\":\(version)}"
        case let .albumMovedIn(id, index, source, version):
            return "{\"id\":\(JSONString.quoted(id.rawValue)),\"index\":\(index),\"movedFrom\":\(JSONString.quoted(source.rawValue)),\"version\":\(version)}"
        case let .albumMovedOut(id, index, target, version):
            return "{\"id\":\(JSONString.quoted(id.rawValue)),\"index\":\(index),\"movedTo\":\(JSONString.quoted(target.rawValue)),\"version\":\(version)}"
        case let .albumMoved(id, from, to, version):
            return "{\"from\":\(from),\"id\":\(JSONString.quoted(id.rawValue)),\"index\":\(to),\"to\":\(to),\"version\":\(version)}"
        case let .libraryReplaced(version):
            return "{\"version\":\(version)}"
        case let .stateChanged(client, index, albumID, version):
            let id = albumID.map { JSONString.quoted($0.rawValue) } ?? "null"
            return "{\"client\":\(JSONString.quoted(client)),\"id\":\(id),\"index\":\(index),\"version\":\(version)}"
        }
    }
}
