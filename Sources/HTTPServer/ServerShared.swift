import Essentials
#if canImport(Glibc)
import Glibc
import CLinux
#endif
import Synchronization

/// What every event loop of one server shares: the router, limits, the worker pool, the
/// connection count and the drain state. Immutable but for the atomics and the drain lock.
final class ServerShared: Sendable {
    let router: Router
    let limits: HTTPServerLimits
    /// Where the loops read "now" (once per wake-up) for every connection timeout.
    let clock: any MonotonicClock
    let headParser: HTTPHeadParser
    /// `limits`' connection timeouts in clock nanoseconds, converted once.
    let connectionTimeouts: ConnectionStateMachine.Timeouts
    let workers: BoundedThreadPool
    /// The read lane's threads (routes marked ``RouteOptions/expensiveRead``); nil without such routes.
    let readWorkers: BoundedThreadPool?
    let errorRenderer: ErrorRenderer
    let logger: HTTPServer.Logger
    let overloadResponse: [UInt8]
    /// Tests only: watches (and may fail) the loops' accept calls.
    let acceptProbe: AcceptProbe?
    /// Decides on requests with a body from their head alone (nil: none).
    let headCheck: HeadCheck?

    private let openConnections = Atomic<Int>(0)
    private let refusedWorkCount = Atomic<Int>(0)
    private let draining = Atomic<Bool>(false)
    private let drainedLoops = Mutex<(count: Int, waiter: (@Sendable (Int) -> Void)?)>((0, nil))

    init(router: Router, limits: HTTPServerLimits, clock: any MonotonicClock = SystemClock(), workers: BoundedThreadPool,
         readWorkers: BoundedThreadPool? = nil, errorRenderer: ErrorRenderer, logger: @escaping HTTPServer.Logger,
         headCheck: HeadCheck? = nil, acceptProbe: AcceptProbe? = nil) {
        self.readWorkers = readWorkers
        self.clock = clock
        self.headCheck = headCheck
        self.acceptProbe = acceptProbe
        self.router = router
        self.limits = limits
        self.headParser = HTTPHeadParser(limits: limits)
        self.connectionTimeouts = ConnectionStateMachine.Timeouts(limits)
        self.workers = workers
        self.errorRenderer = errorRenderer
        self.logger = logger
        let body = HTTPError(.serviceUnavailable, detail: "The server is at its connection limit; retry shortly.",
                             headers: ["Retry-After": "1"]).response()
        var bytes = Array("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\nRetry-After: 1\r\nConnection: close\r\n".utf8)
        if case let .bytes(payload) = body.body {
            bytes += Array("Content-Length: \(payload.count)\r\n\r\n".utf8) + payload
        }
        overloadResponse = bytes
    }

    var connectionCount: Int { openConnections.load(ordering: .relaxed) }

    /// Blocking work refused because its pool's queue was full (or the pool stopping).
    var refusedWork: Int { refusedWorkCount.load(ordering: .relaxed) }

    /// Runs `work` on the pool for `options` and `request` (the read lane for an expensive read,
    /// else the workers: ``RouteOptions/isReadLaneWork(_:)``); false when that pool's queue is
    /// full (or it is stopping): nothing will run.
    func submit(_ options: RouteOptions, _ request: HTTPRequest, _ work: @escaping @Sendable () -> Void) -> Bool {
        let pool = options.isReadLaneWork(request) ? readWorkers ?? workers : workers
        if pool.submit(work) { return true }
        refusedWorkCount.wrappingAdd(1, ordering: .relaxed)
        return false
    }

    /// The answer to a request whose work a pool refused: ``ServerBusy`` as the renderer makes it.
    func busyResponse(_ options: RouteOptions, request: HTTPRequest, context: RequestContext) -> HTTPResponse {
        let pool: ServerBusy.Pool = options.isReadLaneWork(request) && readWorkers != nil ? .reads : .workers
        return errorRenderer.render(ServerBusy(.queueFull(pool)), request: request, context: context)
    }

    private let droppedStreams = Atomic<Int>(0)
    /// Streams dropped because their unsent bytes passed `maxUnsentStreamBytes`.
    var droppedStreamCount: Int { droppedStreams.load(ordering: .relaxed) }
    func countDroppedStream() { droppedStreams.wrappingAdd(1, ordering: .relaxed) }
    var isDraining: Bool { draining.load(ordering: .relaxed) }

    func reserveConnection() -> Bool {
        let now = openConnections.wrappingAdd(1, ordering: .relaxed).newValue
        if now > limits.maxConnections {
            openConnections.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func releaseConnection() { openConnections.wrappingSubtract(1, ordering: .relaxed) }

    func log(_ level: HTTPServer.LogLevel, _ message: String) { logger(level, message) }

    func onParseError(_ error: HTTPParseError, _ peer: IPAddress) {
        logger(.debug, "bad request from \(peer): \(error.detail)")
    }

    func onTimeout(_ peer: IPAddress) { logger(.debug, "request from \(peer) timed out") }

    // MARK: Drain bookkeeping

    func setDraining(onLoopDrained: @escaping @Sendable (_ drainedLoops: Int) -> Void) {
        draining.store(true, ordering: .relaxed)
        drainedLoops.withLock { $0.waiter = onLoopDrained }
    }

    /// Called by each loop once, when it has no connection left while draining: tells the
    /// waiter how many loops have drained so far.
    func loopDrained() {
        let (count, waiter) = drainedLoops.withLock { state -> (Int, (@Sendable (Int) -> Void)?) in
            state.count += 1
            return (state.count, state.waiter)
        }
        waiter?(count)
    }

}

/// A test seam on the accept path: counts accept attempts and can make them fail with an
/// errno (EMFILE), as descriptor exhaustion would, without exhausting the test process's
/// descriptors.
final class AcceptProbe: Sendable {
    private let attemptCount = Atomic<Int>(0)
    private let injectedErrno = Atomic<Int32>(0)

    init() {}

    /// Accept calls the loops have made.
    var attempts: Int { attemptCount.load(ordering: .relaxed) }

    /// From now on accept fails with `code` (0: accept works again).
    func failAccepts(with code: Int32) { injectedErrno.store(code, ordering: .relaxed) }

    /// Called for each accept: the errno to fail with, or 0 to accept for real.
    func attempt() -> Int32 {
        attemptCount.wrappingAdd(1, ordering: .relaxed)
        return injectedErrno.load(ordering: .relaxed)
    }
}
