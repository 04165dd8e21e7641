import Dispatch
import Library
import Synchronization

/// One upstream fetch of one URL, shared by everyone who asked for it while it ran
/// (coalescing): the first caller starts it, later callers wait on the same outcome.
final class CoverFlight: Sendable {
    private struct State {
        var outcome: Result<CachedCover, CoverError>?
        var waiters: [DispatchSemaphore] = []
    }

    let url: CoverURL
    /// The stale copy being revalidated; nil for a first fetch.
    let revalidating: CoverCacheRecord?
    private let state = Mutex(State())

    init(url: CoverURL, revalidating: CoverCacheRecord?) {
        self.url = url
        self.revalidating = revalidating
    }

    /// The outcome, waiting at most `timeout` for it; nil if it is still running.
    func wait(timeout: Duration) -> Result<CachedCover, CoverError>? {
        let signal = DispatchSemaphore(value: 0)
        let done = state.withLock { state -> Result<CachedCover, CoverError>? in
            if let outcome = state.outcome { return outcome }
            state.waiters.append(signal)
            return nil
        }
        if let done { return done }
        guard timeout > .zero else { return nil }
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = min(Int64(Int.max / 2), seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        _ = signal.wait(timeout: .now() + .nanoseconds(Int(nanoseconds)))
        return state.withLock { $0.outcome }
    }

    /// Sets the outcome (once) and wakes every waiter.
    func complete(_ outcome: Result<CachedCover, CoverError>) {
        let waiters = state.withLock { state -> [DispatchSemaphore] in
            guard state.outcome == nil else { return [] }
            state.outcome = outcome
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.signal() }
    }
}
