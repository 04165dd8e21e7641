#if canImport(Glibc)
import Essentials
import CLinux
import Glibc
#endif
import Dispatch
import Synchronization

/// An HTTP/1.1 server: one epoll event loop per core, each with its own `SO_REUSEPORT`
/// listening socket, plus a worker pool for blocking handlers.
///
/// ```swift
/// var routes = RouterBuilder()
/// routes.add(.get, "/healthz") { _, _ in HTTPResponse(contentType: "application/json", bytes: Array("{}\n".utf8)) }
/// let server = try HTTPServer(configuration: .init(port: 0), router: routes.build())
/// try server.start()
/// print(server.port)
/// server.shutdown(grace: .seconds(10))
/// ```
public final class HTTPServer: Sendable {
    public enum LogLevel: Int, Sendable, Comparable {
        case debug, info, warning, error
        public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }
    }
    public typealias Logger = @Sendable (LogLevel, String) -> Void

    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        /// Event loops; default: the CPUs this process may run on.
        public var eventLoops: Int
        /// Threads for blocking work (`.workerPool` routes, routes' blocking paths). Default 16.
        /// The blocking work of routes marked ``RouteOptions/expensiveRead`` runs on threads of
        /// its own instead (``ReadAdmission/Limits/threads``, from the router).
        public var workerThreads: Int
        /// Blocking work that may wait for a worker thread; more is answered 503 with
        /// `Retry-After` (``ServerBusy``) at once instead of queueing without end. Default 1,024.
        public var workerQueueLimit: Int
        public var limits: HTTPServerLimits
        /// What the event loops read "now" from for every timeout in `limits` (head, body and
        /// minimum body rate, idle keep-alive, write, lingering close, the accept pause).
        /// Default: ``SystemClock``; tests pass a `ManualClock`. Read once per loop wake-up.
        public var clock: any MonotonicClock

        public init(host: String = "0.0.0.0", port: Int = 8080, eventLoops: Int? = nil, workerThreads: Int = 16,
                    workerQueueLimit: Int = 1024, limits: HTTPServerLimits = HTTPServerLimits(),
                    clock: any MonotonicClock = SystemClock()) {
            self.host = host
            self.port = port
            self.eventLoops = eventLoops ?? HTTPServer.availableCPUs()
            self.workerThreads = workerThreads
            self.workerQueueLimit = workerQueueLimit
            self.limits = limits
            self.clock = clock
        }
    }

    public let configuration: Configuration
    /// The open-file limit (soft RLIMIT_NOFILE) in force after `init` raised it to the hard
    /// limit; nil if unknown.
    public let descriptorLimit: Int?
    /// The port actually bound (useful with port 0).
    public let port: Int
    private let shared: ServerShared
    private let loops: [EventLoop]
    private let state = Mutex<(started: Bool, stopped: Bool)>((false, false))
    private let stoppedSignal = DispatchSemaphore(value: 0)

    /// Binds the listening sockets; nothing is accepted before `start()`.
    /// - Throws: ``SocketError`` when the address cannot be bound.
    /// - Parameter headCheck: decides on requests with a body from their head, before the body
    ///   is read (see ``HeadCheck``).
    public convenience init(configuration: Configuration, router: Router, errorRenderer: ErrorRenderer = .standard,
                            logger: @escaping Logger = { _, _ in }, headCheck: HeadCheck? = nil) throws {
        try self.init(configuration: configuration, router: router, errorRenderer: errorRenderer, logger: logger,
                      headCheck: headCheck, acceptProbe: nil)
    }

    /// The same, with a probe on the accept path (tests).
    /// Gives the calling thread (a read lane thread) the nice value `nice`.
    private static func lowerCallingThreadPriority(to nice: Int32) {
        #if canImport(Glibc)
        _ = bl_set_calling_thread_nice_value(nice)
        #endif
    }

    init(configuration: Configuration, router: Router, errorRenderer: ErrorRenderer, logger: @escaping Logger,
         headCheck: HeadCheck?, acceptProbe: AcceptProbe?) throws {
        self.configuration = configuration
        // Every connection is a descriptor: take what the hard limit allows, and say so at once
        // when maxConnections cannot be reached anyway.
        descriptorLimit = DescriptorLimit.raiseSoftLimitToHardLimit()
        if let warning = DescriptorLimit.warning(maxConnections: configuration.limits.maxConnections, limit: descriptorLimit) {
            logger(.warning, warning)
        }
        let workers = BoundedThreadPool(
            threads: configuration.workerThreads, queueLimit: max(1, configuration.workerQueueLimit), name: "http-worker",
            stackSize: 1 << 20)
        // The read lane's admission bounds what waits (threads + queue): the pool's own bound
        // is a backstop for work that reached it unadmitted (a middleware's blocking stage).
        var reads: BoundedThreadPool?
        if let lane = router.readAdmission?.limits {
            let nice = Int32(lane.nice)
            var onThreadStart: (@Sendable () -> Void)?
            if nice > 0 { onThreadStart = { @Sendable in HTTPServer.lowerCallingThreadPriority(to: nice) } }
            reads = BoundedThreadPool(
                threads: lane.threads, queueLimit: lane.capacity, name: "http-read", stackSize: 1 << 20, onThreadStart: onThreadStart)
        }
        shared = ServerShared(router: router, limits: configuration.limits, clock: configuration.clock, workers: workers,
                              readWorkers: reads, errorRenderer: errorRenderer, logger: logger, headCheck: headCheck,
                              acceptProbe: acceptProbe)
        do {
            let first = try ListeningSocket(host: configuration.host, port: configuration.port)
            var sockets = [first]
            for _ in 1..<max(1, configuration.eventLoops) {
                sockets.append(try ListeningSocket(host: configuration.host, port: first.port))
            }
            port = first.port
            var loops: [EventLoop] = []
            for (index, socket) in sockets.enumerated() {
                loops.append(try EventLoop(index: index, listener: socket, shared: shared))
            }
            self.loops = loops
        } catch {
            workers.shutdown()
            reads?.shutdown()
            throw error
        }
    }

    /// Starts the event loops.
    public func start() {
        let first = state.withLock { state -> Bool in
            defer { state.started = true }
            return !state.started
        }
        guard first else { return }
        for loop in loops { loop.start() }
    }

    /// True once `shutdown` has begun: readiness probes should fail from then on.
    public var isDraining: Bool { shared.isDraining }

    /// Open connections right now.
    public var connectionCount: Int { shared.connectionCount }
    /// Streams dropped so far because their unsent bytes, the kernel's included, passed
    /// `HTTPServerLimits.maxUnsentStreamBytes`.
    public var droppedStreamCount: Int { shared.droppedStreamCount }

    /// Blocking work waiting for a worker thread right now, and work refused since start
    /// because `workerQueueLimit` items were waiting (the read lane: ``Router/readAdmission``).
    public var workerQueue: (waiting: Int, refused: Int) { (shared.workers.queuedCount, shared.refusedWork) }

    /// Graceful shutdown: stop accepting, close idle connections, let in-flight requests finish
    /// (their responses carry `Connection: close`), end open streams; after `grace` whatever is
    /// left is closed. Returns when every loop and worker has stopped.
    public func shutdown(grace: Duration) {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else {
            waitUntilStopped()
            return
        }
        let started = state.withLock { $0.started }
        let allDrained = DispatchSemaphore(value: 0)
        let loopCount = loops.count
        // The count comes with the call: a closure holding `shared` would keep it (and the
        // router, with everything the routes hold) alive after the server is gone.
        shared.setDraining { drained in
            if drained == loopCount { allDrained.signal() }
        }
        for loop in loops { loop.execute { $0.beginDraining() } }
        // Loops that never ran have no connection to drain (and would not report).
        if started { _ = allDrained.wait(timeout: .now() + .nanoseconds(Int(grace.nanoseconds))) }
        for loop in loops { loop.execute { $0.stop() } }
        if started { for loop in loops { loop.waitUntilStopped() } }
        shared.workers.shutdown()
        shared.readWorkers?.shutdown()
        stoppedSignal.signal()
    }

    /// Blocks until `shutdown` has finished.
    public func waitUntilStopped() {
        stoppedSignal.wait()
        stoppedSignal.signal()
    }

    /// CPUs in this process's affinity mask (so `taskset -c 1` means one loop).
    public static func availableCPUs() -> Int {
        let count = Int(bl_available_cpus())
        if count > 0 { return count }
        return max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }
}
