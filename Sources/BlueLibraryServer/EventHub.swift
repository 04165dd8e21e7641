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
///   `data: <json>`) by the publisher, which then only appends it under a short lock.
/// - Fan-out: a thread of the server's event delivery pool (``EventDeliveryPool``, shared by
///   every hub: a hub holds no thread of its own) takes every frame queued since the hub's last
///   round, joins them into one payload (framed once, its bytes shared by every stream) and hands it to the
///   event loops with one task per loop (`HTTPStreamWriter.fanOut`): one write, one `send`,
///   per subscriber per round, however many events the round holds. Neither the writer nor
///   the fan-out waits for a client; the server drops a client whose queue passes
///   `maxQueuedStreamBytes` (its stream closes and `onClose` removes it here).
/// - Coalescing: only while requests compete with the fan-out (the loops dispatched some during
///   the round) and the round cost at least `minimumPacedCost`, the hub waits after it (queued
///   in the pool, the thread free for other hubs) until the round's cost (the greater of its
///   wall time and the CPU of the thread and the loops) is
///   at most `fanOutShare` of the time since the round began, and never longer than
///   `maxCoalescingDelay` after the round ended. So fan-out to many subscribers cannot starve
///   the requests: events published meanwhile go out together in the next round. On an
///   otherwise idle server, or with rounds that cost under a millisecond (few subscribers),
///   events go out at once.
/// - The last `replayCapacity` frames are kept so a client that reconnects with
///   `Last-Event-ID` gets what it missed. When that is impossible (the gap reaches past the
///   buffer, the id is not a version this server knows, or it is newer than the library) the
///   stream starts with `library.outdated`: reload everything.
/// - The pool also runs the hub's `: heartbeat` comments to every subscriber, so proxies keep
///   idle streams open. A hub without subscribers is queued nowhere and costs no thread.
/// - Ends: ``shutdown()`` (every stream gets `server.shutdown`), ``libraryDeleted()`` (every
///   stream ends, its response complete; a reconnect gets 404), ``retire()`` (an idle hub the
///   registry forgets: a subscription that still reaches it goes to the library's new hub).
///
/// Event ids are library versions. Events that do not bump the version (`state.changed` after
/// `PUT /state`, cover events) carry the current version; on resume only events with a greater
/// version are replayed, so such events published at the version a client last saw are not.
public final class EventHub: LibraryEventSink, ScheduledDelivery, Sendable {
    public struct Configuration: Sendable {
        /// How many events are kept for `Last-Event-ID` resumption.
        public var replayCapacity: Int
        /// How often idle streams get a heartbeat comment.
        public var heartbeat: Duration
        /// The most of the CPU the fan-out rounds take while events keep coming (0 < share <= 1;
        /// 1: no pause between rounds).
        public var fanOutShare: Double
        /// The longest pause between rounds, whatever a round cost (the most an event waits
        /// for the next round to start once the previous one has ended).
        public var maxCoalescingDelay: Duration
        /// Rounds that cost less are never followed by a pause.
        public static let minimumPacedCost = Duration.milliseconds(1)

        public init(replayCapacity: Int = 1000, heartbeat: Duration = .seconds(15), fanOutShare: Double = 0.05,
                    maxCoalescingDelay: Duration = .milliseconds(500)) {
            precondition(replayCapacity >= 0, "replayCapacity must not be negative")
            precondition(fanOutShare > 0 && fanOutShare <= 1, "fanOutShare must be in (0, 1]")
            self.replayCapacity = replayCapacity
            self.heartbeat = heartbeat
            self.fanOutShare = fanOutShare
            self.maxCoalescingDelay = maxCoalescingDelay
        }

        /// The pause after a round that cost `cost`: the round's share of the time from its
        /// start to the next is then at most `fanOutShare`.
        func pause(afterCost cost: Duration) -> Duration {
            guard cost > .zero, fanOutShare < 1 else { return .zero }
            return min(cost * (1 / fanOutShare - 1), maxCoalescingDelay)
        }

        /// When the next round may start, after a round that ran from `began` to `ended`,
        /// used `cpu` (the pool thread's and the loops', which run in parallel) while the loops
        /// dispatched `requests` requests. No pause when nothing competed or the round was
        /// cheap; otherwise the pause for its cost, max(cpu, wall), counted from its start, and
        /// never more than `maxCoalescingDelay` after its end.
        func nextRound(began: ContinuousClock.Instant, ended: ContinuousClock.Instant, cpu: Duration,
                       requests: Int) -> ContinuousClock.Instant {
            let cost = max(cpu, ended - began)
            guard requests > 0, cost >= Self.minimumPacedCost else { return ended }
            return min(ended + maxCoalescingDelay, began + cost + pause(afterCost: cost))
        }
    }

    /// One event: its parts (streams over several libraries rewrite the id and the data) and
    /// the SSE frame a stream of this hub alone sends.
    struct Frame: Sendable {
        let version: Int64
        let name: String
        let json: String
        let bytes: [UInt8]

        init(version: Int64, name: String, json: String) {
            self.version = version
            self.name = name
            self.json = json
            bytes = EventHub.frame(id: version, name: name, json: json)
        }
    }

    /// A frame waiting for the hub's next round; `sequence` orders every published frame.
    struct Pending {
        let sequence: UInt64
        let frame: Frame
    }

    struct Subscriber {
        let sink: any EventStreamSink
        /// Frames before this sequence were replayed (or not wanted) at subscription.
        let firstSequence: UInt64
    }

    /// Where a subscription resumes.
    enum Resume: Sendable, Equatable {
        /// A fresh subscription: live events only.
        case fresh
        /// After the event with this id (the client's `Last-Event-ID`).
        case after(Int64)
        /// An id that is no version of this library: the stream starts with `library.outdated`.
        case unknown(String)

        init(lastEventID: String?) {
            guard let lastEventID else {
                self = .fresh
                return
            }
            self = Int64(lastEventID.trimmingASCIIWhitespace()).map { .after($0) } ?? .unknown(lastEventID)
        }
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
        var statistics = FanOutStatistics()
        /// Whether the pool ever ran, or will run, a round of this hub (a shutdown waits for it).
        var scheduled = false
        /// The hub no longer takes subscribers (`ending` says why) and ends their streams.
        var shutDown = false
        var ending = Ending.shutdown
        /// The last round has ended every stream.
        var finished = false
        /// Forgotten by the registry while idle: a late subscription goes to `successor`.
        var successor: (@Sendable () -> EventHub?)?
        /// Coalescing: the next round starts no earlier.
        var notBefore = ContinuousClock.now
        var nextHeartbeat = ContinuousClock.now
        /// Since when (the registry's clock, ns) the hub has had no subscriber; nil while it has.
        var idleSince: UInt64?
        /// When the last subscriber left (or the hub was made), nil while it has one: the
        /// change follower skips the feed for a hub only some time after (``skipWhileUnsubscribed(to:after:)``).
        var unsubscribedSince: ContinuousClock.Instant? = .now

        mutating func append(_ frame: Frame, capacity: Int, advances: Bool = true) {
            if advances { latest = max(latest, frame.version) }
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

        /// Notes when the last subscriber left.
        mutating func noteIfUnsubscribed() {
            if subscribers.isEmpty, unsubscribedSince == nil { unsubscribedSince = .now }
        }

        /// The kept frames with a version greater than `version`, oldest first.
        func frames(after version: Int64) -> [Frame] {
            (frames[start...] + frames[..<start]).filter { $0.version > version }
        }
    }

    /// Why a hub's streams end.
    enum Ending: Sendable {
        /// The server shuts down: `server.shutdown`, then the end of the stream.
        case shutdown
        /// The library was deleted: the end of the stream (a reconnect gets 404).
        case libraryDeleted
    }

    public let configuration: Configuration
    /// The library version the hub started at (its first `Last-Event-ID` window ends there).
    let startVersion: Int64
    /// This hub among every hub the process made (the change follower tells a library's
    /// hubs apart by it).
    let deliverySerial = DeliverySerial.next()
    private let pool: EventDeliveryPool
    private let state: Mutex<State>
    /// Signalled when the last round has sent the last frames and ended every stream.
    private let stopped = DispatchSemaphore(value: 0)

    static let heartbeatFrame = Array(": heartbeat\n\n".utf8)
    static let shutdownFrame = Array("event: server.shutdown\ndata: {}\n\n".utf8)
    static let subscribedFrame = Array(": subscribed\n\n".utf8)
    static let heartbeatPayload = HTTPStreamPayload(heartbeatFrame)

    /// - Parameter version: the library version when the hub starts; ids older than it cannot
    ///   be resumed.
    public convenience init(configuration: Configuration = Configuration(), version: Int64) {
        self.init(configuration: configuration, version: version, pool: .standalone)
    }

    /// - Parameters:
    ///   - pool: the threads that run the hub's rounds.
    ///   - idleSince: the registry's clock now (the hub starts without subscribers).
    init(configuration: Configuration, version: Int64, pool: EventDeliveryPool, idleSince: UInt64 = 0) {
        self.configuration = configuration
        startVersion = version
        self.pool = pool
        var initial = State(evictedThrough: version, latest: version)
        initial.idleSince = idleSince
        state = Mutex(initial)
    }

    private var heartbeatInterval: Duration { max(.milliseconds(1), configuration.heartbeat) }

    /// When the hub has had no subscriber for `grace` or more: its window jumps to `version`,
    /// keeping nothing before it (a stream that resumes from an older id is filled from the
    /// change feed, as after an eviction; a new one starts live there), so events nobody here
    /// listens to are not read. The grace keeps the frames for a client that reconnects at
    /// once (its stream is decided before it subscribes). False, and nothing changed, when a
    /// subscriber is there (checked under the lock new subscribers take), the last one left
    /// less than `grace` ago, or the window is not behind `version`.
    func skipWhileUnsubscribed(to version: Int64, after grace: Duration) -> Bool {
        state.withLock { state in
            guard state.subscribers.isEmpty, !state.shutDown, version > state.latest,
                  let since = state.unsubscribedSince, ContinuousClock.now - since >= grace
            else { return false }
            state.frames = []
            state.start = 0
            state.evictedThrough = version
            state.latest = version
            return true
        }
    }

    /// The ids a `Last-Event-ID` can resume from with the kept frames alone: after
    /// `evictedThrough` up to `latest`.
    var window: (evictedThrough: Int64, latest: Int64) {
        state.withLock { ($0.evictedThrough, $0.latest) }
    }

    /// Frames published so far (a publish counts at once, before any round hands it out): how
    /// a test checks that nothing was published, without waiting for a delivery that never comes.
    var publishedCount: UInt64 { state.withLock { $0.nextSequence } }

    /// Whether resuming after `lastEventID` needs more than this hub keeps (a version older
    /// than its window, or newer than it has published): the stream then asks the change
    /// feed first (`Backfill`), off the event loop.
    func needsBackfill(lastEventID: String?) -> Bool {
        guard case let .after(seen) = Resume(lastEventID: lastEventID) else { return false }
        return needsBackfill(after: seen)
    }

    /// ``needsBackfill(lastEventID:)`` for a version (one library of a stream's vector).
    func needsBackfill(after seen: Int64) -> Bool {
        let (evicted, latest) = window
        return seen < evicted || seen > latest
    }

    /// The writers of the streams that take the shared payload (tests: to reach their loops).
    var sharedWriters: [HTTPStreamWriter] {
        state.withLock { $0.subscribers.values.compactMap(\.sink.sharedWriter) }
    }

    /// Open `GET /events` streams.
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// What the fan-out has done so far.
    public var statistics: FanOutStatistics { state.withLock { $0.statistics } }

    // MARK: - Publishing

    /// A `state.changed` names the version it refers to without making it: on a shared
    /// database that version may not be published here yet (it comes from the change feed),
    /// and a resume from it must still get the version's own event.
    public func publish(_ event: LibraryEvent) {
        let advances = if case .stateChanged = event { false } else { true }
        publish(name: event.name, json: Self.payload(of: event), version: event.version, advances: advances)
    }

    /// Publishes any event: `json` is the `data` line (one line of JSON); `version` the id,
    /// nil for the newest version published (events that do not change the library).
    /// `advances`: whether the event marks its version as published (false for events that
    /// only refer to a version, such as `state.changed`).
    ///
    /// Costs the caller one formatting and a short lock: the frames are handed to the
    /// subscribers by a round on the event pool, so a writer never waits for the fan-out.
    public func publish(name: String, json: String, version: Int64? = nil, advances: Bool = true) {
        let due = state.withLock { state -> ContinuousClock.Instant? in
            let id = version ?? state.latest
            let frame = Frame(version: id, name: name, json: json)
            state.append(frame, capacity: configuration.replayCapacity, advances: advances)
            let sequence = state.nextSequence
            state.nextSequence += 1
            guard !state.subscribers.isEmpty, !state.shutDown else { return nil }
            state.pending.append(Pending(sequence: sequence, frame: frame))
            return state.pending.count == 1 ? max(state.notBefore, .now) : nil
        }
        if let due { pool.schedule(self, at: due) }
    }

    // MARK: - Subscribing

    /// Adds the stream of one `GET /events` request. Runs on the connection's event loop.
    ///
    /// - Parameter lastEventID: the client's `Last-Event-ID`, or nil for a fresh subscription.
    func subscribe(_ writer: HTTPStreamWriter, lastEventID: String?, backfill: Backfill? = nil) {
        subscribe(PlainEventStream(writer: writer), resume: Resume(lastEventID: lastEventID), lastEventID: lastEventID, announce: true,
                  backfill: backfill)
    }

    /// The events after a client's `Last-Event-ID` read from the change feed, for a resume
    /// from further back than the hub keeps: the feed's changes after `after`, oldest first,
    /// complete through their last version.
    struct Backfill: Sendable {
        let after: Int64
        let frames: [Frame]

        init(after: Int64, events: [LibraryEvent]) {
            self.after = after
            frames = events.map { Frame(version: $0.version, name: $0.name, json: EventHub.payload(of: $0)) }
        }

        /// Whether these are the events after `seen` and reach `through` (the newest version
        /// the hub no longer keeps), so none is missing between them and the kept frames.
        func reaches(_ seen: Int64, _ through: Int64) -> Bool {
            after == seen && (frames.last?.version ?? seen) >= through
        }
    }

    /// Adds one subscription: the missed frames (or `library.outdated`), then every frame
    /// published after this call, each handed to `sink`.
    ///
    /// - Parameters:
    ///   - lastEventID: the id the client gave, quoted back in `library.outdated`.
    ///   - announce: send `: subscribed` once the subscription is live.
    /// - Returns: the newest version this hub has published (or started at) as of the
    ///   subscription; nil when the hub has shut down (the sink got `server.shutdown`).
    ///   - backfill: the change feed's events after the client's id (see ``Backfill``): a resume
    ///     from an id older than the kept frames continues from them, as long as they reach
    ///     the kept frames.
    @discardableResult
    func subscribe(_ sink: any EventStreamSink, resume: Resume, lastEventID: String? = nil, announce: Bool,
                   backfill: Backfill? = nil) -> Int64? {
        enum Outcome {
            case subscribed(id: UInt64, latest: Int64, heartbeat: ContinuousClock.Instant)
            case ended(Ending)
            case moved(@Sendable () -> EventHub?)
        }
        let outcome: Outcome = state.withLock { state in
            if let successor = state.successor { return .moved(successor) }
            if state.shutDown { return .ended(state.ending) }
            // Under the lock: the replay is queued before any live frame (the round
            // takes the lock before writing), and no frame is both replayed and delivered.
            switch resume {
            case .fresh:
                break
            case let .after(seen) where seen >= state.evictedThrough && seen <= state.latest:
                let missed = state.frames(after: seen)
                if !missed.isEmpty { _ = sink.send(missed) }
            case let .after(seen) where seen < state.evictedThrough && (backfill.map { $0.reaches(seen, state.evictedThrough) } ?? false):
                // The feed's events up to the window, then the kept frames (state events of
                // the versions before the window are in no feed, and are not replayed).
                let missed = (backfill?.frames ?? []).filter { $0.version <= state.evictedThrough }
                    + state.frames(after: state.evictedThrough)
                if !missed.isEmpty { _ = sink.send(missed) }
            case .after, .unknown:
                let given: String
                switch resume {
                case let .after(seen): given = lastEventID ?? String(seen)
                case let .unknown(text): given = lastEventID ?? text
                case .fresh: given = ""
                }
                _ = sink.send([Frame(
                    version: state.latest, name: "library.outdated",
                    json: "{\"lastEventId\":\(JSONString.quotedASCII(given)),\"version\":\(state.latest)}")])
            }
            // A first frame, so the client knows the subscription is live.
            if announce { sink.comment(Self.subscribedFrame) }
            let id = state.nextSubscriber
            state.nextSubscriber += 1
            if state.subscribers.isEmpty { state.nextHeartbeat = .now + heartbeatInterval }
            state.subscribers[id] = Subscriber(sink: sink, firstSequence: state.nextSequence)
            state.idleSince = nil
            state.unsubscribedSince = nil
            // Decided here, so a concurrent `shutdown()` knows a round will run and waits.
            state.scheduled = true
            return .subscribed(id: id, latest: state.latest, heartbeat: state.nextHeartbeat)
        }
        switch outcome {
        case let .moved(successor):
            guard let next = successor() else {
                sink.serverShutdown()
                return nil
            }
            return next.subscribe(sink, resume: resume, lastEventID: lastEventID, announce: announce, backfill: backfill)
        case let .ended(ending):
            sink.end(ending)
            return nil
        case let .subscribed(id, latest, heartbeat):
            pool.schedule(self, at: heartbeat)
            sink.onClose { [weak self] in self?.remove([id]) }
            return latest
        }
    }

    /// Forgets subscribers whose streams closed.
    private func remove(_ ids: [UInt64]) {
        guard !ids.isEmpty else { return }
        state.withLock { state in
            for id in ids { state.subscribers[id] = nil }
            state.noteIfUnsubscribed()
        }
    }

    // MARK: - Idleness (the registry's)

    /// Whether the hub has had no subscriber since before `cutoff` (the registry's clock, ns);
    /// a hub found without subscribers and no mark gets one at `now`.
    func isIdle(since cutoff: UInt64, now: UInt64) -> Bool {
        state.withLock { state in
            guard state.subscribers.isEmpty, state.pending.isEmpty, !state.shutDown else {
                if !state.subscribers.isEmpty { state.idleSince = nil }
                return false
            }
            guard let since = state.idleSince else {
                state.idleSince = now
                return false
            }
            return since <= cutoff
        }
    }

    /// The registry forgets this idle hub: a subscription that reaches it anyway (it found the
    /// hub just before) goes to `successor` (the library's hub then). False when a subscriber
    /// came meanwhile (the hub stays).
    func retire(successor: @escaping @Sendable () -> EventHub?) -> Bool {
        state.withLock { state in
            guard state.subscribers.isEmpty, state.successor == nil, !state.shutDown else { return false }
            state.successor = successor
            return true
        }
    }

    /// The library was deleted: what was published is still delivered, then every stream
    /// ends (a complete response, without `server.shutdown`: a client that reconnects is told
    /// 404); later subscriptions end at once. Does not wait.
    func libraryDeleted() {
        let run = state.withLock { state -> Bool in
            guard !state.shutDown else { return false }
            state.shutDown = true
            state.ending = .libraryDeleted
            return state.scheduled
        }
        if run { pool.schedule(self) }
    }

    // MARK: - The rounds (run by the pool)

    /// One round: the heartbeat when it is due, the pending frames when the coalescing pause
    /// is over (at once on shutdown). Returns when the hub wants its next round: the pause's
    /// end while frames wait, the next heartbeat while it has subscribers, nil otherwise.
    func runRound() -> ContinuousClock.Instant? {
        let now = ContinuousClock.now
        let (deliver, heartbeat) = state.withLock { state -> (Bool, Bool) in
            if state.finished { return (false, false) }
            return (state.shutDown || (!state.pending.isEmpty && now >= state.notBefore),
                    !state.shutDown && !state.subscribers.isEmpty && now >= state.nextHeartbeat)
        }
        if heartbeat {
            sendHeartbeat()
            state.withLock { $0.nextHeartbeat = now + heartbeatInterval }
        }
        if deliver {
            let began = ContinuousClock.now
            let threadStart = threadCPUNanoseconds()
            guard let round = deliverPending() else {
                state.withLock { $0.finished = true }
                stopped.signal()
                return nil
            }
            let cpu = Duration.nanoseconds(threadCPUNanoseconds() - threadStart) + round.loopCPU
            let next = configuration.nextRound(began: began, ended: .now, cpu: cpu, requests: round.requests)
            state.withLock { $0.notBefore = next }
        }
        return state.withLock { state -> ContinuousClock.Instant? in
            if state.finished { return nil }
            if state.shutDown { return .now }
            var due: ContinuousClock.Instant?
            if !state.pending.isEmpty { due = state.notBefore }
            if !state.subscribers.isEmpty { due = min(due ?? state.nextHeartbeat, state.nextHeartbeat) }
            return due
        }
    }

    /// Hands every pending frame to the subscribers (one round); returns the CPU time the
    /// event loops spent on it and the requests they dispatched meanwhile, nil once the hub has
    /// shut down (then every stream has got `server.shutdown` and been finished).
    private func deliverPending() -> (loopCPU: Duration, requests: Int)? {
        let (batch, subscribers, shutDown) = state.withLock { state in
            defer { state.pending = [] }
            return (state.pending, Array(state.subscribers), state.shutDown)
        }
        let round = batch.isEmpty ? (Duration.zero, 0) : fanOut(batch, to: subscribers)
        if shutDown {
            let (last, ending) = state.withLock { state in
                defer { state.subscribers = [:] }
                return (Array(state.subscribers.values), state.ending)
            }
            for subscriber in last { subscriber.sink.end(ending) }
            return nil
        }
        return round
    }

    /// One round: every subscriber that wants the whole batch and takes the hub's framing gets
    /// one shared payload (the frames joined, framed once) through one task per event loop;
    /// the others (a stream over several libraries, a subscription made during the batch) get
    /// their frames in one write each. Returns the loops' CPU time and the requests they
    /// dispatched meanwhile (0 without shared writers: the other writes are not waited for).
    private func fanOut(_ batch: [Pending], to subscribers: [(key: UInt64, value: Subscriber)]) -> (loopCPU: Duration, requests: Int) {
        let first = batch[0].sequence
        let frames = batch.map(\.frame)
        var round = FanOutStatistics(batches: 1, events: frames.count)
        var writers: [HTTPStreamWriter] = []
        var writerIDs: [UInt64] = []
        var closed: [UInt64] = []
        for (id, subscriber) in subscribers {
            if subscriber.firstSequence <= first, let writer = subscriber.sink.sharedWriter {
                writers.append(writer)
                writerIDs.append(id)
                continue
            }
            let wanted = subscriber.firstSequence <= first
                ? frames : batch.filter { $0.sequence >= subscriber.firstSequence }.map(\.frame)
            guard !wanted.isEmpty else { continue }
            if subscriber.sink.send(wanted) {
                round.writes += 1
                round.deliveries += wanted.count
            } else {
                closed.append(id)
            }
        }
        var loopCPU = Duration.zero
        var requests = 0
        if !writers.isEmpty {
            let report = HTTPStreamWriter.fanOut(HTTPStreamPayload(Self.joined(frames)), to: writers)
            closed += (report.closed + report.dropped).map { writerIDs[$0] }
            round.writes += report.writes
            round.deliveries += report.writes * frames.count
            loopCPU = report.loopCPU
            requests = report.requests
        }
        round.cpu = loopCPU
        state.withLock { state in
            for id in closed { state.subscribers[id] = nil }
            state.noteIfUnsubscribed()
            state.statistics += round
        }
        return (loopCPU, requests)
    }

    /// The frames as one run of bytes (the one frame's own bytes when there is one).
    static func joined(_ frames: [Frame]) -> [UInt8] {
        guard frames.count > 1 else { return frames.first?.bytes ?? [] }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(frames.reduce(0) { $0 + $1.bytes.count })
        for frame in frames { bytes += frame.bytes }
        return bytes
    }

    /// Sends one heartbeat comment to every subscriber (the timer's work), as one fan-out.
    func sendHeartbeat() {
        let subscribers = state.withLock { state in state.shutDown ? [] : Array(state.subscribers.values) }
        var writers: [HTTPStreamWriter] = []
        for subscriber in subscribers {
            if let writer = subscriber.sink.sharedWriter {
                writers.append(writer)
            } else {
                subscriber.sink.heartbeat()
            }
        }
        _ = HTTPStreamWriter.fanOut(Self.heartbeatPayload, to: writers)
    }

    /// Graceful shutdown: what was published is still delivered, then every open stream gets
    /// `event: server.shutdown` and ends; later subscriptions get the same at once. Call before
    /// the HTTP server drains (it waits up to 2 s for the hub's last round).
    public func shutdown() {
        guard beginShutdown() else { return }
        awaitShutdown(until: .now() + .seconds(2))
    }

    /// The first half of ``shutdown()``: asks for the last round; true when there is one to
    /// wait for (``awaitShutdown(until:)``).
    func beginShutdown() -> Bool {
        let run = state.withLock { state -> Bool in
            guard !state.shutDown else { return false }
            state.shutDown = true
            state.ending = .shutdown
            return state.scheduled
        }
        if run { pool.schedule(self) }
        return run
    }

    /// Waits until the last round has ended every stream, at most until `deadline`.
    func awaitShutdown(until deadline: DispatchTime) {
        _ = stopped.wait(timeout: deadline)
    }

    // MARK: - Formatting

    static func frame(id: Int64, name: String, json: String) -> [UInt8] {
        frame(id: String(id), name: name, json: json)
    }

    /// An SSE frame with any id text (a stream over several libraries uses a version vector).
    static func frame(id: String, name: String, json: String) -> [UInt8] {
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

/// Where a hub hands one subscription's frames. Called from the hub's rounds on the event pool (live frames,
/// heartbeats, shutdown) and, for the replay, from the subscribing thread under the hub's lock.
protocol EventStreamSink: Sendable {
    /// The stream's writer when it sends frames exactly as the hub formats them: the hub then
    /// writes its shared payload there (``EventHub`` fans out to all such streams at once);
    /// nil when the stream rewrites frames (``send(_:)`` gets them).
    var sharedWriter: HTTPStreamWriter? { get }
    /// Sends events, oldest first, in one write; false when the stream is gone (the hub then
    /// forgets it).
    func send(_ frames: [EventHub.Frame]) -> Bool
    /// Sends an SSE comment frame (`: subscribed`).
    func comment(_ bytes: [UInt8])
    /// Sends the heartbeat comment.
    func heartbeat()
    /// Sends `server.shutdown` and ends the stream.
    func serverShutdown()
    /// The library was deleted: ends the stream (the response completes; no event).
    func libraryDeleted()
    /// Runs `handler` when the stream closes.
    func onClose(_ handler: @escaping @Sendable () -> Void)
}

/// The stream of one library's hub: frames as the hub formatted them.
struct PlainEventStream: EventStreamSink {
    let writer: HTTPStreamWriter

    var sharedWriter: HTTPStreamWriter? { writer }
    func send(_ frames: [EventHub.Frame]) -> Bool { writer.write(EventHub.joined(frames)) }
    func comment(_ bytes: [UInt8]) { writer.write(bytes) }
    func heartbeat() { writer.write(EventHub.heartbeatFrame) }
    func serverShutdown() {
        writer.write(EventHub.shutdownFrame)
        writer.finish()
    }
    func libraryDeleted() { writer.finish() }
    func onClose(_ handler: @escaping @Sendable () -> Void) { writer.onClose(handler) }
}

extension EventStreamSink {
    /// Ends the stream as the hub's `ending` says.
    func end(_ ending: EventHub.Ending) {
        switch ending {
        case .shutdown: serverShutdown()
        case .libraryDeleted: libraryDeleted()
        }
    }
}
