#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Where code that measures elapsed time reads "now": nanoseconds that never jump backwards.
///
/// Injected wherever a timeout or an age is decided (event loops, the request model, covers), so
/// that logic is tested by advancing a `ManualClock` instead of sleeping.
public protocol MonotonicClock: Sendable {
    /// Nanoseconds since an arbitrary fixed point (the same one for the life of the clock).
    func nanoseconds() -> UInt64
}

/// CLOCK_MONOTONIC: cheap to read on every loop turn, never jumps.
public struct SystemClock: MonotonicClock {
    public init() {}

    public func nanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }
}

/// A clock that moves only when told to: for tests of timeouts and ages without sleeping.
/// What waits on it (a `BackgroundLoop`'s interval) is woken by each `advance`.
public final class ManualClock: MonotonicClock {
    private let now: Atomic<UInt64>
    private let observers = Mutex<(next: Int, wakes: [Int: @Sendable () -> Void])>((0, [:]))

    public init(startingAt nanoseconds: UInt64 = 1_000_000_000) {
        now = Atomic(nanoseconds)
    }

    public func nanoseconds() -> UInt64 { now.load(ordering: .acquiring) }

    public func advance(by duration: Duration) {
        now.add(duration.nanoseconds, ordering: .releasing)
        for wake in observers.withLock({ Array($0.wakes.values) }) { wake() }
    }

    /// Calls `wake` after every `advance` until `removeObserver` with the returned token.
    public func observeAdvances(_ wake: @escaping @Sendable () -> Void) -> Int {
        observers.withLock { observers in
            observers.next += 1
            observers.wakes[observers.next] = wake
            return observers.next
        }
    }

    public func removeObserver(_ token: Int) {
        _ = observers.withLock { $0.wakes.removeValue(forKey: token) }
    }
}
