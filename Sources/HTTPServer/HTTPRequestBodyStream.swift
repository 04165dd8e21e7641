import Dispatch
import Synchronization

/// The receiving side of a streamed request body, for routes with `RouteOptions.streamsBody`:
/// the responder runs on the worker pool as soon as the head is read and pulls the body with
/// ``next()`` while the connection's event loop decodes it (Content-Length or chunked).
///
/// Backpressure: the event loop hands over at most about ``window`` bytes ahead of the
/// responder; past that it stops reading the socket until the responder has taken half of
/// them, so a fast client cannot make the server buffer its body, whatever its size.
///
/// A responder that answers before taking the whole body ends the request: the rest of the
/// body is not read and the connection closes after the response.
public final class HTTPRequestBodyStream: Sendable {
    /// Why the body could not be read whole.
    public enum Failure: Error, Sendable, Equatable {
        /// The client closed or the connection timed out before the body ended.
        case truncated
        /// The body was badly framed, over the route's limit, or stalled: ``rejection`` is the
        /// answer the server gives for it, which the responder should throw or send.
        case rejected
    }

    private struct State {
        var chunks: [[UInt8]] = []
        var head = 0
        var queued = 0
        var peakQueued = 0
        var received = 0
        var finished = false
        var failure: Failure?
        /// What the server answers for the failure (413, 400, 408), when it is the server's to say.
        var answer: HTTPError?
        /// The loop stopped reading until the responder catches up.
        var paused = false
        /// The responder answered; further bytes are dropped.
        var abandoned = false
    }

    /// Bytes the loop may hand over ahead of the responder.
    public let window: Int
    private let loop: EventLoop
    private let connectionID: UInt64
    private let state = Mutex(State())
    private let available = DispatchSemaphore(value: 0)

    init(loop: EventLoop, connectionID: UInt64, window: Int) {
        self.loop = loop
        self.connectionID = connectionID
        self.window = max(window, 1)
    }

    /// The next piece of the body, nil at its end. Blocks until bytes arrive: call it on a
    /// worker thread, never on an event loop.
    /// - Throws: ``Failure`` when the body did not arrive whole.
    public func next() throws(Failure) -> [UInt8]? {
        while true {
            let (outcome, resume) = state.withLock { state -> (Result<[UInt8]?, Failure>?, Bool) in
                if state.head < state.chunks.count {
                    let chunk = state.chunks[state.head]
                    state.chunks[state.head] = []
                    state.head += 1
                    if state.head == state.chunks.count {
                        state.chunks.removeAll(keepingCapacity: true)
                        state.head = 0
                    }
                    state.queued -= chunk.count
                    let resume = state.paused && state.queued <= window / 2
                    if resume { state.paused = false }
                    return (.success(chunk), resume)
                }
                if let failure = state.failure { return (.failure(failure), false) }
                if state.finished { return (.success(nil), false) }
                return (nil, false)
            }
            if resume {
                let id = connectionID
                loop.execute { loop in loop.connection(id)?.resumeRequestBody() }
            }
            if let outcome { return try outcome.get() }
            available.wait()
        }
    }

    /// The most bytes that ever waited for the responder (at most about ``window`` plus one read).
    public var peakQueuedBytes: Int { state.withLock { $0.peakQueued } }

    /// Body bytes received so far.
    public var receivedBytes: Int { state.withLock { $0.received } }

    /// The answer to a body the server rejected (badly framed, over the route's limit: 400,
    /// 413) or that stalled (408), once ``next()`` threw. The connection leaves the answer to
    /// the responder, so that it goes out through the route's middleware (request id, access
    /// log) like any other: a responder whose read failed throws this (nil: the client left).
    public var rejection: HTTPError? { state.withLock { $0.answer } }

    // MARK: - The event loop's side

    /// Hands `bytes` over. Returns false when the window is full: the loop stops reading until
    /// the responder resumes it.
    func deliver(_ bytes: [UInt8]) -> Bool {
        let more = state.withLock { state -> Bool in
            state.received += bytes.count
            guard !state.abandoned else { return true }
            state.chunks.append(bytes)
            state.queued += bytes.count
            state.peakQueued = max(state.peakQueued, state.queued)
            if state.queued >= window { state.paused = true }
            return !state.paused
        }
        available.signal()
        return more
    }

    /// The body ended.
    func finish() {
        state.withLock { $0.finished = true }
        available.signal()
    }

    /// The body will not end: `next()` throws `failure` once the queued bytes are taken;
    /// `answer` is what the responder should answer (``rejection``).
    func fail(_ failure: Failure, answer: HTTPError? = nil) {
        state.withLock { state in
            if !state.finished, state.failure == nil {
                state.failure = failure
                state.answer = answer
            }
        }
        available.signal()
    }

    /// The responder answered: queued bytes are dropped, and so is whatever else arrives.
    func abandon() {
        state.withLock { state in
            state.abandoned = true
            state.chunks = []
            state.head = 0
            state.queued = 0
            if !state.finished, state.failure == nil { state.failure = .truncated }
        }
        available.signal()
    }
}
