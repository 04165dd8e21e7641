import Synchronization

/// One read shared by every caller that asks while an earlier read runs, the way etcd shares a
/// ReadIndex among the reads that arrive meanwhile.
///
/// At most one read is in flight. A caller that finds none starts one at once, on its own thread,
/// for the keys it asked for. A caller that finds one running joins the next batch, which starts
/// when the running read ends, for every key its callers asked for; the first caller of a batch
/// reads it, the others wait for its outcome. So every caller's answer comes from a read that
/// started after it asked (it is at least as new as anything that finished before the call), an
/// idle process pays one read per call, and a busy one one read per batch, however many callers
/// the batch has.
///
/// The read is the caller's closure: whichever caller reads a batch runs its own, so they should
/// all be the same function of the keys. A read that throws gives every caller of its batch that
/// error.
public final class ReadBatcher<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    public typealias Values = [Key: Value]

    private final class Batch: Sendable {
        /// Completed with the batch's keys when the read before it ends: its first caller reads.
        let turn = SingleFlight<Set<Key>>()
        let outcome = SingleFlight<Result<Values, any Error>>()
    }

    /// What a call does: read a batch now, read the next when its turn comes, or wait for one.
    private enum Role {
        case readNow(Batch, Set<Key>)
        case readNext(Batch)
        case wait(Batch)
    }

    private struct State {
        /// A read is in flight (while false, no batch waits).
        var reading = false
        /// The batch that starts when the running read ends, and the keys its callers want.
        var next: Batch?
        var wanted: Set<Key> = []
        /// Reads run and calls made since the start (how much the reads were shared).
        var reads = 0
        var calls = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// How many reads ran and how many calls asked since the start.
    public var statistics: (reads: Int, calls: Int) { state.withLock { ($0.reads, $0.calls) } }

    /// The values of `keys` from a read that started after this call; a key the read does not
    /// return is missing from the answer (which may hold other callers' keys too).
    ///
    /// - Parameter abandon: asked every `pollInterval` while this call waits for a batch another
    ///   caller reads; an error it returns is thrown at once (the read goes on for the others).
    ///   A caller that reads a batch itself waits for nothing but the read before its own.
    public func values(
        of keys: [Key], pollInterval: Duration = .milliseconds(5), abandon: () -> (any Error)? = { nil },
        read: (Set<Key>) throws -> Values
    ) throws -> Values {
        let role = state.withLock { state -> Role in
            state.calls += 1
            if !state.reading {
                state.reading = true
                return .readNow(Batch(), Set(keys))
            }
            state.wanted.formUnion(keys)
            if let next = state.next { return .wait(next) }
            let batch = Batch()
            state.next = batch
            return .readNext(batch)
        }
        switch role {
        case .readNow(let batch, let keys):
            return try run(batch, keys, read).get()
        case .readNext(let batch):
            return try run(batch, batch.turn.wait(), read).get()
        case .wait(let batch):
            while true {
                if let outcome = batch.outcome.wait(timeout: pollInterval) { return try outcome.get() }
                if let error = abandon() { throw error }
            }
        }
    }

    /// Reads `batch`, hands the turn to the next batch, then gives the outcome to its callers.
    private func run(_ batch: Batch, _ keys: Set<Key>, _ read: (Set<Key>) throws -> Values) -> Result<Values, any Error> {
        let outcome = Result { try read(keys) }
        let handoff = state.withLock { state -> (Batch, Set<Key>)? in
            state.reads += 1
            guard let next = state.next else {
                state.reading = false
                return nil
            }
            defer {
                state.next = nil
                state.wanted = []
            }
            return (next, state.wanted)
        }
        if let (next, wanted) = handoff { next.turn.complete(wanted) }
        batch.outcome.complete(outcome)
        return outcome
    }
}
