import Synchronization

/// The sending side of a streaming response (Server-Sent Events). Any thread may write; the
/// bytes are handed to the connection's event loop, which frames them as chunks. A client
/// that reads too slowly, disconnects, or a server that shuts down closes the stream, and
/// the `onClose` handlers run once (on the event loop).
public final class HTTPStreamWriter: Sendable {
    private struct State {
        var closed = false
        var onClose: [@Sendable () -> Void] = []
    }

    private let loop: EventLoop
    private let connectionID: UInt64
    private let state = Mutex(State())

    init(loop: EventLoop, connectionID: UInt64) {
        self.loop = loop
        self.connectionID = connectionID
    }

    /// Whether the stream has ended (writes are then dropped).
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Sends `bytes` as one chunk. Returns false if the stream is already closed.
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        guard !isClosed else { return false }
        let id = connectionID
        loop.execute { loop in loop.connection(id)?.streamWrite(bytes) }
        return true
    }

    /// Ends the stream cleanly (the last chunk is sent, then the connection is closed).
    public func finish() {
        guard !isClosed else { return }
        let id = connectionID
        loop.execute { loop in loop.connection(id)?.streamFinish() }
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
    }
}
