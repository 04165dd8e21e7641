import Synchronization

/// Runs what follows each commit of one library (its events, its version memo) in the order of
/// the commits, whichever thread gets there first.
///
/// A store may commit several mutations in one transaction (group commit) and then wake their
/// callers in any order; without this, the caller of a later mutation could publish its event
/// before the caller of an earlier one, and an event stream would go backwards in versions.
/// So a mutation takes a ticket **inside** its write transaction (tickets are therefore in the
/// order the store ran the bodies, which is the commit order), and after the commit hands its
/// follow-up to ``finish(_:_:)`` with that ticket; the follow-ups run strictly in ticket order.
/// A mutation that failed finishes its ticket with nothing to run, so the next ones go on.
///
/// The follow-ups run outside the lock, one at a time, on the thread that finished the lowest
/// outstanding ticket (it then runs the ones queued behind it): they must be short and must
/// not take a ticket themselves.
final class CommitOrder: Sendable {
    private struct State {
        var nextTicket: UInt64 = 0
        /// The ticket whose follow-up runs next.
        var nextToRun: UInt64 = 0
        /// Finished tickets at or above `nextToRun`, with their follow-ups (nil: nothing to run).
        var finished: [UInt64: (@Sendable () -> Void)?] = [:]
        /// A thread is running follow-ups; others only leave theirs.
        var running = false
    }

    private let state = Mutex(State())

    /// A ticket for a mutation whose body is running now, inside its write transaction. Every
    /// ticket must be passed to `finish` exactly once, or the later ones never run.
    func take() -> UInt64 {
        state.withLock { state in
            defer { state.nextTicket += 1 }
            return state.nextTicket
        }
    }

    /// Marks `ticket` finished: runs `followUp` (nil for a mutation that failed) after those of
    /// every earlier ticket, then those of later tickets already finished; or leaves it for the
    /// thread that finishes the earliest outstanding ticket.
    func finish(_ ticket: UInt64, _ followUp: (@Sendable () -> Void)?) {
        var next: (@Sendable () -> Void)?? = state.withLock { state in
            state.finished[ticket] = .some(followUp)
            return Self.claimNext(&state)
        }
        while let ready = next {
            ready?()
            next = state.withLock { state in
                state.running = false
                return Self.claimNext(&state)
            }
        }
    }

    /// The follow-up of `nextToRun` when it is finished and no thread is running one (this
    /// thread then runs it); `.none` otherwise.
    private static func claimNext(_ state: inout State) -> (@Sendable () -> Void)?? {
        guard !state.running, let followUp = state.finished.removeValue(forKey: state.nextToRun) else { return .none }
        state.nextToRun += 1
        state.running = true
        return .some(followUp)
    }
}
