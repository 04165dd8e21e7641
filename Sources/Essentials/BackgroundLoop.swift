import Dispatch
import Synchronization

/// The thread of a background service: it runs a pass every `interval` of its `clock`, or
/// sooner when woken (`wake()`: wakes that come while a pass runs fold into one more pass),
/// with the lifecycle every service shares (`LifecycleGate`): started once, and `stop()` ends
/// the thread after the pass under way and waits for it. Tests call `passNow` for a pass at
/// once, or give a `ManualClock` and advance it past the interval (its `advance` wakes the loop).
///
/// `start`'s `makePass` runs first on the loop's thread and returns the pass: state the pass
/// keeps from one run to the next (a connection, a retry flag) lives in that closure, on that
/// thread alone, and is released before `stop()` returns.
public final class BackgroundLoop: Sendable {
    public let name: String
    private let interval: Duration
    private let clock: any MonotonicClock
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
    public init(name: String, interval: Duration, clock: any MonotonicClock = SystemClock()) {
        self.name = name
        self.interval = interval
        self.clock = clock
    }

    /// Passes finished so far.
    public var finishedPasses: UInt64 { passes.withLock { $0.finished } }

    /// Waits until `count` passes have finished; false when `timeout` ran out first.
    @discardableResult
    public func waitForPasses(_ count: UInt64, timeout: Duration) -> Bool {
        passes.withLock { $0.waiters += 1 }
        defer { passes.withLock { $0.waiters -= 1 } }
        let deadline = DispatchTime.now(plus: timeout)
        while passes.withLock({ $0.finished < count }) {
            if passFinished.wait(timeout: deadline) == .timedOut { return false }
        }
        return true
    }

    /// Starts the thread (a second call does nothing).
    public func start(_ makePass: @escaping @Sendable () -> () -> Void) {
        gate.start {
            // The first interval counts from here, and a manual clock's advances wake the loop
            // from here on (not from whenever the thread gets going).
            let due = clock.nanoseconds() &+ interval.nanoseconds
            let manual = clock as? ManualClock
            let observer = manual?.observeAdvances { [wakeup] in wakeup.signal() }
            startThread(named: name) { [self] in
                defer { if let observer { manual?.removeObserver(observer) } }
                run(makePass, firstDue: due, waitsForAdvances: manual != nil)
            }
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
        // A pass under way began before this call; the next one begins after it.
        let target = passes.withLock { $0.begun + 1 }
        wake()
        return waitForPasses(target, timeout: timeout)
    }

    public func stop() {
        gate.stop {
            wakeup.signal()
            finished.wait()
        }
    }

    /// - Parameter waitsForAdvances: the clock is a manual one, whose advances wake the loop;
    ///   the system clock's interval is waited out.
    private func run(_ makePass: () -> () -> Void, firstDue: UInt64, waitsForAdvances: Bool) {
        var pass: (() -> Void)? = makePass()
        let step = interval.nanoseconds
        var due = firstDue
        while true {
            let now = clock.nanoseconds()
            if now < due {
                if waitsForAdvances {
                    wakeup.wait()
                } else {
                    _ = wakeup.wait(timeout: .now() + .nanoseconds(Int(clamping: due - now)))
                }
            }
            let woken = wakePending.exchange(false, ordering: .acquiringAndReleasing)
            if gate.isStopping { break }
            // Woken by an advance that did not reach the interval, or by a signal left over.
            guard woken || clock.nanoseconds() >= due else { continue }
            due = clock.nanoseconds() &+ step
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
