import Dispatch
import Synchronization

/// One run of some work, shared by everyone who asked for its result while it ran
/// (single-flight, or coalescing): the first caller starts the work and later ``complete(_:)``s
/// the flight; every other caller ``wait()``s on the same outcome instead of starting its own.
///
/// The owner keeps flights in its own registry (keyed as it likes) and removes a flight when it
/// completes; the flight only carries the outcome to the waiters. The outcome is set once: later
/// `complete` calls are ignored.
///
/// ```swift
/// if let flight = registry[key] { return flight.wait() }          // join the running load
/// let flight = SingleFlight<Result<Page, any Error>>()
/// registry[key] = flight
/// let outcome = Result { try load() }                             // lead it
/// registry[key] = nil
/// flight.complete(outcome)
/// ```
public final class SingleFlight<Outcome: Sendable>: Sendable {
    private struct State {
        var outcome: Outcome?
        var waiters: [DispatchSemaphore] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// The outcome if the flight has completed; never waits.
    public var outcome: Outcome? { state.withLock { $0.outcome } }

    /// The outcome, waiting for it as long as it takes.
    public func wait() -> Outcome {
        wait(until: .distantFuture)!
    }

    /// The outcome, waiting at most `timeout` for it; nil if it is still running then.
    public func wait(timeout: Duration) -> Outcome? {
        wait(until: timeout > .zero ? .now(plus: timeout) : nil)
    }

    /// Sets the outcome (the first call only) and wakes every waiter; false if it was already set.
    @discardableResult
    public func complete(_ outcome: Outcome) -> Bool {
        let waiters = state.withLock { state -> [DispatchSemaphore]? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.waiters = [] }
            return state.waiters
        }
        guard let waiters else { return false }
        for waiter in waiters { waiter.signal() }
        return true
    }

    /// nil `deadline`: only look, never wait.
    private func wait(until deadline: DispatchTime?) -> Outcome? {
        let step = state.withLock { state -> (outcome: Outcome?, signal: DispatchSemaphore?) in
            if let outcome = state.outcome { return (outcome, nil) }
            guard deadline != nil else { return (nil, nil) }
            let signal = DispatchSemaphore(value: 0)
            state.waiters.append(signal)
            return (nil, signal)
        }
        if let outcome = step.outcome { return outcome }
        guard let deadline, let signal = step.signal else { return nil }
        if signal.wait(timeout: deadline) == .success { return state.withLock { $0.outcome } }
        // Timed out: take the semaphore back, so a caller that waits in slices leaves none behind.
        return state.withLock { state in
            state.waiters.removeAll { $0 === signal }
            return state.outcome
        }
    }
}
