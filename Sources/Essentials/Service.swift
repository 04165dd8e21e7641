import Dispatch
import Synchronization

/// Background work with one lifecycle (`ServiceLifecycle`): started once, stopped once, and
/// `stop()` returns when the work has ended. A `ServiceGroup` starts several in a declared order
/// and stops them in reverse.
public protocol Service: Sendable {
    /// A short name for logs and thread names.
    var serviceName: String { get }
    /// Starts the work (a thread, a listening socket); a second call does nothing.
    func start() throws
    /// Stops the work and waits for it to end; a second call does nothing. A service that never
    /// started closes what its construction opened, if anything.
    func stop()
}

/// `ServiceLifecycle` under a lock, with the waits: what a service holds to start and stop once,
/// whoever calls and from whichever thread.
public final class LifecycleGate: Sendable {
    private let lifecycle = Mutex(ServiceLifecycle())
    private let stopped = DispatchSemaphore(value: 0)

    public init() {}

    public var state: ServiceLifecycle.State { lifecycle.withLock { $0.state } }
    /// True once a stop was asked for (a running service's loop checks it).
    public var isStopping: Bool { lifecycle.withLock { $0.isStopping } }

    /// Runs `body` if this is the first start (and no stop came first); a throwing `body`
    /// leaves the service stopped.
    public func start(_ body: () throws -> Void) rethrows {
        guard lifecycle.withLock({ $0.startRequested() }) == .start else { return }
        do {
            try body()
        } catch {
            lifecycle.withLock { $0.startFailed() }
            throw error
        }
    }

    /// Runs `body` when the service runs and nobody else is stopping it (or, with
    /// `evenIfNeverStarted`, when it never started); waits for a stop under way; returns at once
    /// when it has stopped already.
    public func stop(evenIfNeverStarted: Bool = false, _ body: () -> Void) {
        switch lifecycle.withLock({ $0.stopRequested() }) {
        case .stop:
            body()
            lifecycle.withLock { $0.stopFinished() }
            stopped.signal()
        case .neverStarted:
            if evenIfNeverStarted { body() }
            lifecycle.withLock { $0.stopFinished() }
            stopped.signal()
        case .waitForStop:
            stopped.wait()
            stopped.signal()  // for the next waiter
        case .none:
            return
        }
    }
}

/// A service made of two closures, for parts whose start and stop are calls on something else
/// (a server's listen and drain, a thread pool's shutdown). Each closure runs at most once.
public final class ClosureService: Service {
    public let serviceName: String
    private let onStart: @Sendable () throws -> Void
    private let onStop: @Sendable () -> Void
    private let stopsWithoutStart: Bool
    private let gate = LifecycleGate()

    /// - Parameter stopsWithoutStart: `stop` runs even when `start` never did: for what lives
    ///   from its construction (a pool, an open database).
    public init(_ name: String, stopsWithoutStart: Bool = false, start: @escaping @Sendable () throws -> Void = {},
                stop: @escaping @Sendable () -> Void) {
        serviceName = name
        onStart = start
        onStop = stop
        self.stopsWithoutStart = stopsWithoutStart
    }

    public func start() throws { try gate.start(onStart) }
    public func stop() { gate.stop(evenIfNeverStarted: stopsWithoutStart, onStop) }
}

/// Services started in the order given and stopped in the reverse order: a service may use
/// those before it while it runs, and they outlive it.
public final class ServiceGroup: Sendable {
    public let services: [any Service]
    private let gate = LifecycleGate()

    public init(_ services: [any Service]) {
        self.services = services
    }

    /// Starts each service in order. When one fails, those already started are stopped (in
    /// reverse) and the error is rethrown; the group is then stopped.
    public func start() throws {
        try gate.start {
            for (index, service) in services.enumerated() {
                do {
                    try service.start()
                } catch {
                    for started in services.prefix(index).reversed() { started.stop() }
                    throw error
                }
            }
        }
    }

    /// Stops every service in reverse order, once, whoever calls; a group never started tells
    /// its services to stop too (each closes what it opened at construction).
    public func stop() {
        gate.stop(evenIfNeverStarted: true) {
            for service in services.reversed() { service.stop() }
        }
    }
}
