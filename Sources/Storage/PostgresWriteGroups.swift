import Dispatch
import Synchronization

/// One write body of one library waiting for its turn in ``PostgresWriteGroups``.
///
/// `@unchecked Sendable` for the reasons of SQLite's `WriterJob`: `run` is a caller's
/// non-escaping body, called only by the thread that leads the batch while its owner is blocked
/// in `wake.wait()` (or by the owner itself when it leads); `handover` is written by that thread
/// before `wake.signal()` and read by the owner after `wake.wait()` returns. The owner clears
/// `run` when done.
final class PostgresWriteJob: @unchecked Sendable {
    /// What the thread that woke a waiting job tells it.
    enum Handover {
        /// Its batch finished: committed (nil) or failed with the error, nothing of it kept.
        case done((any Error)?)
        /// Its owner now leads: it runs the job itself, with the ones queued behind it.
        case lead
    }

    var run: ((PostgresSession, KnownLibraryRow) throws -> KnownLibraryRow)?
    let wake = DispatchSemaphore(value: 0)
    var handover: Handover?

    init(_ run: @escaping (PostgresSession, KnownLibraryRow) throws -> KnownLibraryRow) {
        self.run = run
    }

    /// Runs the body on the batch's session, with the library row as the jobs before it left it;
    /// returns the row as this job leaves it.
    func body(_ session: PostgresSession, _ row: KnownLibraryRow) throws -> KnownLibraryRow {
        guard let run else { throw StorageError(.corrupt, "a write ran after its caller returned") }
        return try run(session, row)
    }
}

/// How many write transactions this instance committed through its write groups and how many
/// writes they carried (``PostgresAlbumStore/writeGroupStatistics``).
public struct PostgresWriteGroupStatistics: Sendable, Equatable {
    public var transactions = 0
    public var jobs = 0
    public var largestBatch = 0
}

/// Group commit per library on PostgreSQL, as SQLite's writer queue does for its one writer.
///
/// Writers of one library serialise on its row lock anyway (`SELECT … FOR UPDATE`), and each
/// commit waits for its WAL flush while holding it: one at a time, 64 clients got fewer writes
/// through than one (each waiter woken by each commit). Here at most one transaction per library
/// is in flight from this instance: a write that finds its library free runs at once, alone (one
/// client pays nothing extra); the ones that come meanwhile queue, and the first of them, when
/// the turn passes to it, takes up to `maxBatch` of them into one transaction, each under its own
/// savepoint: a write that fails is rolled back alone, the others commit together, and each
/// caller returns only after that commit (one WAL flush for the batch). Instances still
/// serialise on the row lock, batch by batch.
final class PostgresWriteGroups: Sendable {
    private struct State {
        /// The libraries whose batch is running, with the jobs queued behind it.
        var busy: [String: [PostgresWriteJob]] = [:]
        var statistics = PostgresWriteGroupStatistics()
    }

    private let state = Mutex(State())
    let maxBatch: Int

    init(maxBatch: Int) {
        self.maxBatch = max(1, maxBatch)
    }

    var statistics: PostgresWriteGroupStatistics { state.withLock { $0.statistics } }

    /// Writes queued behind a running batch, over every library.
    var waitingCount: Int { state.withLock { $0.busy.values.reduce(0) { $0 + $1.count } } }

    /// Runs `job` for `library`, alone or in a batch, and returns its outcome: nil when it
    /// committed, else its error. `runBatch` runs a batch and returns one outcome per job, in order.
    func perform(_ job: PostgresWriteJob, library: String, runBatch: ([PostgresWriteJob]) -> [(any Error)?]) -> (any Error)? {
        let leads = state.withLock { state in
            if state.busy[library] != nil {
                state.busy[library]?.append(job)
                return false
            }
            state.busy[library] = []
            return true
        }
        if !leads {
            job.wake.wait()
            if case let .done(error)? = job.handover { return error }
            // Handed the lead: the batch running before it is done.
        }
        let batch = [job] + state.withLock { state -> [PostgresWriteJob] in
            let taken = Array((state.busy[library] ?? []).prefix(maxBatch - 1))
            state.busy[library]?.removeFirst(taken.count)
            return taken
        }
        let outcomes = runBatch(batch)
        let next = state.withLock { state -> PostgresWriteJob? in
            state.statistics.transactions += 1
            state.statistics.jobs += batch.count
            state.statistics.largestBatch = max(state.statistics.largestBatch, batch.count)
            guard let next = state.busy[library]?.first else {
                state.busy[library] = nil
                return nil
            }
            state.busy[library]?.removeFirst()
            return next
        }
        for (index, done) in batch.enumerated().dropFirst() {
            done.handover = .done(index < outcomes.count ? outcomes[index] : Self.noOutcome)
            done.wake.signal()
        }
        if let next {
            next.handover = .lead
            next.wake.signal()
        }
        return outcomes.first ?? Self.noOutcome
    }

    /// The outcome of a job its batch gave none (a `runBatch` that broke its contract): it failed.
    private static var noOutcome: any Error {
        StorageError(.corrupt, "a write's batch ended without telling its outcome")
    }
}
