import Dispatch
import Synchronization

/// The thread of a background service: it runs a pass every `interval`, or sooner when woken
/// (`wake()`: wakes that come while a pass runs fold into one more pass), with the lifecycle
/// every service shares (`LifecycleGate`): started once, and `stop()` ends the thread after the
/// pass under way and waits for it. Tests call `passNow` instead of waiting out the interval.
///
/// `start`'s `makePass` runs first on the loop's thread and returns the pass: state the pass
/// keeps from one run to the next (a connection, a retry flag) lives in that closure, on that
/// thread alone, and is released before `stop()` returns.
public final class BackgroundLoop: Sendable {
    public let name: String
    private let interval: Duration
    private let gate = LifecycleGate()
    private let wakeup = DispatchSemaphore(value: 0)
    private let wakePending = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    /// Passes begun and finished, for `passNow`.
    private let passes = Mutex(Passes())
    private let passFinished = DispatchSemaphore(value: 0)

    private struct Passes {
        var begun: UInt64 = 0
        var finished: UInt64 = 0
        var waiters = 0
    }

    /// - Parameter name: the thread's name (`top -H`; 15 bytes are kept).
    public init(name: String, interval: Duration) {
        self.name = name
        self.interval = interval
    }

    /// Starts the thread (a second call does nothing).
    public func start(_ makePass: @escaping @Sendable () -> () -> Void) {
        gate.start {
            startThread(named: name) { [self] in run(makePass) }
        }
    }

    /// Asks for a pass now (one more pass however many wakes come before it begins).
    public func wake() {
        if !wakePending.exchange(true, ordering: .acquiringAndReleasing) { wakeup.signal() }
    }

    /// Wakes the loop and waits until a pass that began after this call has finished: for
    /// tests and for callers that need the pass's effect. False when `timeout` ran out first, or
    /// the loop is not running.
    @discardableResult
    public func passNow(timeout: Duration) -> Bool {
        guard gate.state == .running else { return false }
        let target = passes.withLock { passes in
            passes.waiters += 1
            return passes.begun + 1
        }
        defer { passes.withLock { $0.waiters -= 1 } }
        wake()
        let deadline = DispatchTime.now(plus: timeout)
        while passes.withLock({ $0.finished < target }) {
            if passFinished.wait(timeout: deadline) == .timedOut { return false }
        }
        return true
    }

    public func stop() {
        gate.stop {
            wakeup.signal()
            finished.wait()
        }
    }

    private func run(_ makePass: () -> () -> Void) {
        var pass: (() -> Void)? = makePass()
        while true {
            _ = wakeup.wait(timeout: .now(plus: interval))
            wakePending.store(false, ordering: .releasing)
            if gate.isStopping { break }
            passes.withLock { $0.begun += 1 }
            pass?()
            let waiters = passes.withLock { passes in
                passes.finished += 1
                return passes.waiters
            }
            for _ in 0..<waiters { passFinished.signal() }
        }
        pass = nil
        finished.signal()
    }
}
