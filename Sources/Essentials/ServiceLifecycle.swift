/// The lifecycle every background service shares, as a value: the state, and for each event
/// the action its owner performs (the owner holds it under its lock and acts outside it, so the
/// decisions are tested without threads).
///
/// `idle` → `running` → `stopping` → `stopped`; a service stopped before it ever started goes
/// from `idle` to `stopping` (to close what it opened) without running, and nothing starts
/// again once stopping began.
public struct ServiceLifecycle: Sendable, Equatable {
    public enum State: Sendable, Equatable {
        case idle, running, stopping, stopped
    }

    public enum StartAction: Sendable, Equatable {
        /// Start the work now.
        case start
        /// Nothing to do: it is running, or stopping or stopped (a stopped service stays stopped).
        case none
    }

    public enum StopAction: Sendable, Equatable {
        /// Stop the running work and wait for it; then report `stopFinished()`.
        case stop
        /// It never started: no work runs, but what its construction opened may want closing;
        /// then report `stopFinished()` (it is stopping meanwhile, so other stops wait).
        case neverStarted
        /// Nothing to do: it has stopped already.
        case none
        /// Another caller is stopping it: wait until it has stopped.
        case waitForStop
    }

    public private(set) var state: State = .idle

    public init() {}

    public mutating func startRequested() -> StartAction {
        guard state == .idle else { return .none }
        state = .running
        return .start
    }

    /// A start that failed: the work never ran.
    public mutating func startFailed() {
        if state == .running { state = .stopped }
    }

    public mutating func stopRequested() -> StopAction {
        switch state {
        case .idle:
            state = .stopping
            return .neverStarted
        case .running:
            state = .stopping
            return .stop
        case .stopping:
            return .waitForStop
        case .stopped:
            return .none
        }
    }

    public mutating func stopFinished() {
        state = .stopped
    }

    public var isStopping: Bool { state == .stopping || state == .stopped }
}
