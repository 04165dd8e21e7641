import Essentials
import Dispatch
import Synchronization

/// The sending side of a streaming response (Server-Sent Events). Any thread may write; the
/// bytes are handed to the connection's event loop, which frames them as chunks. A client
/// that reads too slowly, disconnects, or a server that shuts down closes the stream, and
/// the `onClose` handlers run once (on the event loop; on the fan-out's thread when a fan-out
/// drops a stream its loop did not get to).
public final class HTTPStreamWriter: Sendable {
    private struct State {
        var closed = false
        var onClose: [@Sendable () -> Void] = []
        /// Bytes handed to `write` that the loop has not queued yet.
        var inTransit = 0
        /// Bytes the connection had queued for the socket when it last reported.
        var queued = 0
        var waiting = false
    }

    let loop: EventLoop
    let connectionID: UInt64
    private let state = Mutex(State())
    private let progress = DispatchSemaphore(value: 0)

    init(loop: EventLoop, connectionID: UInt64) {
        self.loop = loop
        self.connectionID = connectionID
    }

    /// Whether the stream has ended (writes are then dropped).
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Sends `bytes` as one chunk. Returns false if the stream is already closed.
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        guard reserve(bytes.count) else { return false }
        let id = connectionID
        loop.execute { loop in loop.connection(id)?.streamWrite(bytes) }
        return true
    }

    /// Sends a payload framed beforehand (see ``fanOut(_:to:limit:checkEvery:)`` for many streams).
    @discardableResult
    public func write(_ payload: HTTPStreamPayload) -> Bool {
        guard reserve(payload.count) else { return false }
        let id = connectionID
        loop.execute { loop in loop.connection(id)?.streamWrite(payload) }
        return true
    }

    /// Counts `count` bytes as on their way to the loop; false if the stream is closed.
    func reserve(_ count: Int) -> Bool {
        state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.inTransit += count
            return true
        }
    }

    /// Blocks the calling thread until fewer than `limit` bytes wait to be sent, so a producer
    /// (an export) runs at the client's pace instead of filling memory. Never call it on an
    /// event loop. Returns false once the stream is closed, or once `deadline` (if any) passed
    /// with the client still not reading (a producer that holds something for the client's
    /// sake, like a read snapshot, then stops).
    public func waitForCapacity(below limit: Int, until deadline: ContinuousClock.Instant? = nil) -> Bool {
        while true {
            let ready = state.withLock { state -> Bool? in
                if state.closed { return nil }
                if state.inTransit + state.queued < limit { return true }
                state.waiting = true
                return false
            }
            guard let ready else { return false }
            if ready { return true }
            var wait = Duration.milliseconds(100)
            if let deadline {
                let now = ContinuousClock.now
                guard now < deadline else { return false }
                wait = min(wait, deadline - now)
            }
            _ = progress.wait(timeout: .now(plus: max(wait, .nanoseconds(1))))
        }
    }

    /// The loop queued `appended` bytes of this stream; `queued` are now waiting for the socket.
    func didQueue(appended: Int, queued: Int) {
        state.withLock { state in
            state.inTransit -= appended
            state.queued = queued
        }
    }

    /// The connection flushed; `queued` bytes are still waiting for the socket.
    func didFlush(queued: Int) {
        let wake = state.withLock { state -> Bool in
            state.queued = queued
            defer { state.waiting = false }
            return state.waiting
        }
        if wake { progress.signal() }
    }

    /// Ends the stream cleanly (the last chunk is sent, then the connection is closed).
    public func finish() {
        guard !isClosed else { return }
        let id = connectionID
        loop.execute { loop in loop.connection(id)?.streamFinish() }
    }

    /// Ends the stream by closing the connection without the final chunk, so the client sees
    /// a truncated body rather than a short one that looks complete (for producers that fail).
    public func abort() {
        guard !isClosed else { return }
        let id = connectionID
        loop.execute { loop in loop.connection(id)?.close() }
    }

    /// Runs `handler` once when the stream closes, for whatever reason; at once if it has.
    public func onClose(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.closed { return true }
            state.onClose.append(handler)
            return false
        }
        if runNow { handler() }
    }

    /// Called by the connection when the stream is over.
    func markClosed() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.closed else { return [] }
            state.closed = true
            defer { state.onClose = [] }
            return state.onClose
        }
        for handler in handlers { handler() }
        progress.signal()
    }
}
