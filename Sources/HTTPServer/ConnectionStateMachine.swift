/// Where one connection is and what it decides from there, without any I/O: which phase it is
/// in (one enum whose payloads are what that phase needs, as NIO's HTTPServerPipelineHandler
/// keeps it), when its current wait times out, and what a timeout, a finished response, a
/// blocked write, the client leaving or a server drain lead to. ``Connection`` owns one, feeds
/// it the clock's time (``EventLoop/now``) and the facts of its socket and buffers, and carries
/// out the answers with real syscalls; the tests drive it alone with a `ManualClock`.
///
/// Phases and their transitions (each method asserts where it may be called from, so an
/// illegal transition stops a debug build):
///
///     awaitingHead ──head──▶ readingBody ──body whole──▶ processing ──response──▶ awaitingHead
///          │   └──head check on a worker──▶ checkingHead ──▶ readingBody / processing
///          └──head with no body, or a streamed body──────▶ processing ──stream──▶ streaming
///     any (an error answer: 400, 408, 413, ...) ──▶ processing ──response, no keep-alive──▶ close
///     output flushed while closing ──▶ lingering (or closed) ──▶ closed
///
/// Beside the phase stand only what is independent of it: `closing` (what happens once the
/// output is out), and two facts that can arrive in any phase, `peerClosed` and
/// `drainRequested`. Socket readiness and the per-turn budget are I/O facts the connection keeps.
struct ConnectionStateMachine {
    /// `indirect`: each payload lives in a box, so the phase is one pointer. Inline, the
    /// payloads (a whole pending request) made every look at the phase on the hot path copy
    /// the struct through the runtime's multi-payload enum witnesses (about 5% of a healthz
    /// core in `perf`); a box costs one small allocation per transition with a payload.
    indirect enum Phase {
        /// Waiting for (the rest of) a request head; when its first byte came (nil: idle).
        case awaitingHead(headStartedAt: UInt64?)
        /// A head check runs on the worker pool before any body byte is read.
        case checkingHead(Connection.PendingRequest)
        /// Head read; the body is being collected into the request's decoder.
        case readingBody(Connection.PendingRequest, BodyProgress)
        /// The responder runs (on the worker pool, or inline just now); how to frame its
        /// response, and the body it still reads as it arrives (routes that stream it).
        case processing(Connection.ResponseFraming, StreamedBody?)
        /// A streaming response body is open.
        case streaming(Connection.ResponseFraming, OpenStream)
        /// The last response is out and the write side shut down; what the client still sends
        /// is read and dropped until it closes or a bound is reached (lingering close).
        case lingering(bytesLeft: Int)
        case closed
    }

    /// When a body was first expected (clock ns) and how many bytes came since: the minimum
    /// body rate is measured from these.
    struct BodyProgress {
        var startedAt: UInt64
        var received = 0
    }

    /// A request body still arriving while its responder runs (`RouteOptions.streamsBody`).
    struct StreamedBody {
        let stream: HTTPRequestBodyStream
        var decoder: HTTPBodyDecoder
        /// The responder is a window behind: nothing is read until it resumes the connection.
        var paused = false
        var progress: BodyProgress
    }

    /// An open streaming response.
    struct OpenStream {
        let writer: HTTPStreamWriter
        let endsOnShutdown: Bool
    }

    /// What happens once the output is flushed.
    enum Closing {
        /// Nothing: the connection carries on.
        case no
        /// Close (lingering if the client may still be sending).
        case whenFlushed
        /// Close after an error answer after which the client may still be sending (a refused
        /// body, a framing error): always by lingering, unless the client already left.
        case whenFlushedAfterError
    }

    /// The timeouts of `HTTPServerLimits`, in clock nanoseconds.
    struct Timeouts {
        var head: UInt64
        var idle: UInt64
        var body: UInt64
        var write: UInt64
        var linger: UInt64
        var bodyRateGrace: UInt64
        var minBodyBytesPerSecond: Int

        init(_ limits: HTTPServerLimits) {
            head = limits.headTimeout.nanoseconds
            idle = limits.idleTimeout.nanoseconds
            body = limits.bodyTimeout.nanoseconds
            write = limits.writeTimeout.nanoseconds
            linger = limits.lingerTimeout.nanoseconds
            bodyRateGrace = limits.bodyRateGracePeriod.nanoseconds
            minBodyBytesPerSecond = limits.minBodyBytesPerSecond
        }
    }

    let timeouts: Timeouts
    private(set) var phase: Phase = .awaitingHead(headStartedAt: nil)
    private(set) var closing = Closing.no
    /// The client closed its side (recv returned 0).
    private(set) var peerClosed = false
    /// The server is shutting down: no keep-alive, close once idle.
    private(set) var drainRequested = false
    /// When the current wait (head, body, idle, write, linger) times out, in clock ns.
    private(set) var deadline: UInt64 = .max

    /// A connection accepted at `now`: it has `idleTimeout` to start a request.
    init(timeouts: Timeouts, now: UInt64) {
        self.timeouts = timeouts
        deadline = now &+ timeouts.idle
    }

    // MARK: - Questions

    var isClosed: Bool {
        if case .closed = phase { return true }
        return false
    }

    var isLingering: Bool {
        if case .lingering = phase { return true }
        return false
    }

    var isStreaming: Bool {
        if case .streaming = phase { return true }
        return false
    }

    /// Whether input is parsed as a request head or body now.
    var parsesInput: Bool {
        switch phase {
        case .awaitingHead, .readingBody: return true
        default: return false
        }
    }

    /// Whether a streamed request body is being read (the responder already runs).
    var readsStreamedBody: Bool {
        if case .processing(_, let body?) = phase { return !body.paused }
        return false
    }

    /// Whether the connection waits on its responder (or head check) and reads nothing: what
    /// keeps pipelined requests in the buffer, answered in order, one at a time.
    var waitsForResponder: Bool {
        switch phase {
        case .checkingHead: return true
        case .processing(_, let body): return body == nil || body!.paused
        default: return false
        }
    }

    /// Whether, with its turn used up, the connection still has input it wants to work on.
    func wantsMoreInput(hasBufferedInput: Bool, socketReadable: Bool) -> Bool {
        switch phase {
        case .awaitingHead, .readingBody, .lingering, .streaming:
            return hasBufferedInput || (socketReadable && !peerClosed)
        case .processing where readsStreamedBody:
            // A streamed body being read: the same budget as a buffered one.
            return hasBufferedInput || (socketReadable && !peerClosed)
        case .processing, .checkingHead, .closed:
            return false
        }
    }

    /// Whether the deadline has passed at `now`.
    func isDue(now: UInt64) -> Bool { deadline <= now }

    /// Whether closing now could reset a connection whose client is still sending: after an
    /// error answer, or with input not yet read. (Not while the server shuts down.)
    func shouldLinger(hasUnreadInput: Bool, socketReadable: Bool) -> Bool {
        !peerClosed && !drainRequested && (closing == .whenFlushedAfterError || hasUnreadInput || socketReadable)
    }

    // MARK: - Request head

    /// Bytes of a head are buffered: the first of them starts the head timeout.
    mutating func headBytesArrived(now: UInt64) {
        guard case .awaitingHead(nil) = phase else {
            assert(parsesInput, "head bytes parsed in \(phase)")
            return
        }
        phase = .awaitingHead(headStartedAt: now)
        deadline = now &+ timeouts.head
    }

    /// A head check takes the request to a worker: nothing is read meanwhile, nothing times out.
    mutating func checkHeadOnWorker(_ pending: Connection.PendingRequest) {
        assertPhase(isAwaitingHead, "a head check")
        phase = .checkingHead(pending)
        deadline = .max
    }

    /// The worker's head check is over: the request it checked, if the connection still waits for it.
    mutating func takeCheckedHead() -> Connection.PendingRequest? {
        guard case let .checkingHead(pending) = phase else { return nil }
        phase = .processing(Connection.ResponseFraming(isHead: false, version: pending.head.version, keepAlive: false), nil)
        return pending
    }

    // MARK: - Request body

    /// The body of `pending` is to be read: it must make progress within `bodyTimeout` and keep
    /// up `minBodyBytesPerSecond` after the grace period.
    mutating func awaitBody(_ pending: Connection.PendingRequest, now: UInt64) {
        assertPhase(isAwaitingHead || isProcessingWithoutBody, "reading a body")
        let progress = BodyProgress(startedAt: now)
        phase = .readingBody(pending, progress)
        armBodyDeadline(progress, now: now)
    }

    /// Takes the request whose body is being read out of the phase (so its body buffer has one
    /// owner while it grows) and answers nothing yet; `bodyIncomplete` puts it back.
    mutating func takeBodyRequest() -> (Connection.PendingRequest, BodyProgress)? {
        guard case let .readingBody(pending, progress) = phase else { return nil }
        phase = .processing(Connection.ResponseFraming(isHead: false, version: pending.head.version, keepAlive: false), nil)
        return (pending, progress)
    }

    /// The body taken by `takeBodyRequest` needs more bytes.
    mutating func bodyIncomplete(_ pending: Connection.PendingRequest, _ progress: BodyProgress) {
        assertPhase(isProcessingWithoutBody, "putting back a body")
        phase = .readingBody(pending, progress)
    }

    /// `count` bytes of a body (buffered or streamed) came in at `now`.
    mutating func bodyBytesArrived(_ count: Int, now: UInt64) {
        switch phase {
        case .readingBody(let pending, var progress):
            progress.received += count
            phase = .readingBody(pending, progress)
            armBodyDeadline(progress, now: now)
        case .processing(let framing, var body?):
            body.progress.received += count
            phase = .processing(framing, body)
            armBodyDeadline(body.progress, now: now)
        default:
            break
        }
    }

    /// The responder starts while the body still arrives (`RouteOptions.streamsBody`).
    mutating func streamBody(_ body: StreamedBody, framing: Connection.ResponseFraming, now: UInt64) {
        assertPhase(isAwaitingHead || isProcessingWithoutBody, "streaming a body")
        phase = .processing(framing, body)
        armBodyDeadline(body.progress, now: now)
    }

    /// Takes the streamed body out of the phase to decode into it; `putStreamedBody` puts it back.
    mutating func takeStreamedBody() -> StreamedBody? {
        guard case let .processing(framing, body?) = phase else { return nil }
        phase = .processing(framing, nil)
        return body
    }

    /// The streamed body after decoding: nil when it ended. Paused or ended, nothing is owed
    /// by the client, so nothing times out.
    mutating func putStreamedBody(_ body: StreamedBody?) {
        guard case let .processing(framing, nil) = phase else {
            assertionFailure("a streamed body put back in \(phase)")
            return
        }
        phase = .processing(framing, body)
        if body == nil || body!.paused { deadline = .max }
    }

    /// The responder took enough of a paused body: read on, with the rate measured afresh (the
    /// server was the one not reading).
    mutating func resumeStreamedBody(now: UInt64) -> Bool {
        guard case .processing(let framing, var body?) = phase, body.paused else { return false }
        body.paused = false
        body.progress = BodyProgress(startedAt: now)
        phase = .processing(framing, body)
        armBodyDeadline(body.progress, now: now)
        return true
    }

    /// The body must make progress within `bodyTimeout` and, after the grace period, keep up
    /// `minBodyBytesPerSecond` on average: the deadline is whichever comes first.
    private mutating func armBodyDeadline(_ progress: BodyProgress, now: UInt64) {
        var next = now &+ timeouts.body
        if timeouts.minBodyBytesPerSecond > 0 {
            // When the bytes received so far stop being enough (Double: no overflow for any
            // body size or rate).
            let earned = Double(progress.received) / Double(timeouts.minBodyBytesPerSecond) * 1e9
            let allowed = max(Double(timeouts.bodyRateGrace), earned)
            if allowed < Double(UInt64.max / 2) { next = min(next, progress.startedAt &+ UInt64(allowed)) }
        }
        deadline = next
    }

    // MARK: - Responses

    /// The request goes to its responder; the client owes nothing until it answers.
    mutating func dispatch(framing: Connection.ResponseFraming) {
        assertPhase(isAwaitingHead || isProcessingWithoutBody || readsStreamedBody, "a dispatch")
        if case let .processing(_, body?) = phase {
            // The streamed body stays with the request; its deadline stands.
            phase = .processing(framing, body)
        } else {
            phase = .processing(framing, nil)
            deadline = .max
        }
    }

    /// The server answers on its own (a parse error, a refused head, a timeout): whatever the
    /// phase, the answer is the next response, and the connection closes after it by lingering.
    mutating func answerWithError(version: HTTPVersion) {
        assert(!isClosed && !isLingering, "an error answer in \(phase)")
        phase = .processing(Connection.ResponseFraming(isHead: false, version: version, keepAlive: false), nil)
        closing = .whenFlushedAfterError
    }

    /// The request whose head was read and whose body is awaited or checked (nil otherwise).
    var pendingRequest: Connection.PendingRequest? {
        switch phase {
        case let .readingBody(pending, _), let .checkingHead(pending): return pending
        default: return nil
        }
    }

    /// How the current response is framed (while processing).
    var responseFraming: Connection.ResponseFraming? {
        switch phase {
        case let .processing(framing, _), let .streaming(framing, _): return framing
        default: return nil
        }
    }

    /// The response opens a stream.
    mutating func openStream(_ stream: OpenStream, framing: Connection.ResponseFraming) {
        assertPhase(isProcessingWithoutBody, "opening a stream")
        phase = .streaming(framing, stream)
        deadline = .max
    }

    /// The response is queued whole: on to the next request, or closing. The next wait is the
    /// write timeout while output is queued, otherwise the idle timeout.
    mutating func responseFinished(keepAlive: Bool, outputEmpty: Bool, inputDrained: Bool, now: UInt64) {
        assertPhase(isProcessingWithoutBody, "a finished response")
        phase = .awaitingHead(headStartedAt: nil)
        if !keepAlive { closeWhenFlushed() }
        deadline = now &+ (outputEmpty ? timeouts.idle : timeouts.write)
        if drainRequested && inputDrained { closeWhenFlushed() }
    }

    /// The stream ended cleanly: the connection closes once its last chunk is out.
    mutating func streamFinished() -> OpenStream? {
        guard case let .streaming(_, stream) = phase else { return nil }
        closeWhenFlushed()
        phase = .awaitingHead(headStartedAt: nil)
        return stream
    }

    /// Closes once the output is flushed (never loosening an error answer's lingering).
    mutating func closeWhenFlushed() {
        if closing == .no { closing = .whenFlushed }
    }

    // MARK: - Writing

    /// Some output went out and more is queued: the client has another `writeTimeout`.
    mutating func wroteSome(now: UInt64) {
        deadline = now &+ timeouts.write
    }

    /// The socket took everything queued (and the connection is not closing).
    mutating func outputDrained(inputDrained: Bool, now: UInt64) {
        switch phase {
        case .awaitingHead where deadline != .max && inputDrained:
            deadline = now &+ timeouts.idle
        case .processing(_, let body?) where !body.paused:
            // A streamed body is still owed by the client: its deadline stands.
            break
        case .streaming, .processing, .checkingHead:
            // Nothing owed to this client right now (a handler or head check is still working).
            deadline = .max
        default:
            break
        }
    }

    /// The socket is full: if nothing else is timed, the client has `writeTimeout` to read.
    mutating func writeBlocked(now: UInt64) {
        if deadline == .max { deadline = now &+ timeouts.write }
    }

    // MARK: - Ending

    /// What a timeout leads to.
    enum TimeoutAction: Equatable {
        /// Answer 408 with this detail and close (lingering).
        case requestTimeout(String)
        /// Close at once; `counted` when it is a request that timed out (logged as one).
        case close(counted: Bool)
    }

    static let headTimeoutDetail = "The request head did not arrive in time."
    static let bodyTimeoutDetail = "The request body did not arrive in time, or arrived too slowly."

    /// The current wait ran out: a slow or idle client is dropped; one caught in the middle of
    /// a request gets a 408 when nothing else is being written to it.
    func timedOut(hasBufferedInput: Bool, outputEmpty: Bool) -> TimeoutAction {
        switch phase {
        case .awaitingHead where hasBufferedInput && outputEmpty:
            // Half a head after the head timeout: a slowloris client.
            return .requestTimeout(Self.headTimeoutDetail)
        case .readingBody where outputEmpty:
            // A body that stalled, or trickles in below the minimum rate: the same.
            return .requestTimeout(Self.bodyTimeoutDetail)
        case .processing(_, _?) where outputEmpty:
            // A streamed body (the responder already reads it) that stalled or trickles in
            // below the minimum rate: the same; the responder's next read fails.
            return .requestTimeout(Self.bodyTimeoutDetail)
        case .readingBody:
            return .close(counted: true)
        default:
            return .close(counted: false)
        }
    }

    /// The client closed its side. True when the connection should close now; otherwise it
    /// closes once its output is out (half-closed clients still get their response).
    mutating func peerLeft(outputEmpty: Bool) -> Bool {
        peerClosed = true
        switch phase {
        case .processing, .checkingHead:
            closeWhenFlushed()
            return false
        case .awaitingHead, .readingBody, .streaming, .lingering, .closed:
            if outputEmpty { return true }
            closeWhenFlushed()
            return false
        }
    }

    /// What a server drain leads to.
    enum DrainAction: Equatable {
        case none
        case close
        /// End the open stream (it ends on shutdown).
        case finishStream
    }

    /// Server shutdown: close now if idle, otherwise after the current response.
    mutating func drain(inputDrained: Bool, outputEmpty: Bool) -> DrainAction {
        drainRequested = true
        switch phase {
        case .awaitingHead where inputDrained:
            // Idle, or still writing its last response: close once that is out.
            if outputEmpty { return .close }
            closeWhenFlushed()
            return .none
        case let .streaming(_, stream):
            return stream.endsOnShutdown ? .finishStream : .none
        case .lingering:
            // Its response is out; the server is going away.
            return .close
        default:
            return .none
        }
    }

    /// The write side is shut down: drop what the client still sends, within bounds.
    mutating func beginLingering(maxBytes: Int, now: UInt64) {
        assert(closing != .no && !isClosed, "lingering in \(phase) without closing")
        phase = .lingering(bytesLeft: maxBytes)
        closing = .no
        deadline = now &+ timeouts.linger
    }

    /// `count` more bytes were dropped while lingering. True when the bound is reached.
    mutating func discarded(_ count: Int) -> Bool {
        guard case let .lingering(left) = phase else { return false }
        phase = .lingering(bytesLeft: left - count)
        return left - count <= 0
    }

    /// The connection is closed. Returns the phase it was in (for what must be let go).
    mutating func close() -> Phase {
        let last = phase
        phase = .closed
        deadline = .max
        return last
    }

    // MARK: - Checks

    private var isAwaitingHead: Bool {
        if case .awaitingHead = phase { return true }
        return false
    }

    private var isProcessingWithoutBody: Bool {
        if case .processing(_, nil) = phase { return true }
        return false
    }

    private func assertPhase(_ legal: Bool, _ transition: @autoclosure () -> String) {
        assert(legal, "illegal connection transition: \(transition()) in \(phase)")
    }
}
