import CSQLite
import Dispatch
import Synchronization

/// One caller's work for the writer connection, waiting in ``WriterQueue``.
///
/// `@unchecked Sendable`: `run` is a caller's non-Sendable body, called only by the thread that
/// holds the writer while the caller is blocked in `wake.wait()` (so the body never runs
/// concurrently with its owner); `outcome` is written by that thread before `wake.signal()`
/// and read by the owner after `wake.wait()` returns (the semaphore orders the two), or by
/// the owner itself while it holds the writer. The owner clears `run` once done (the body is
/// the caller's non-escaping closure and must not outlive the call); by then no other thread
/// reads it.
final class WriterJob: @unchecked Sendable {
    enum Kind {
        /// Runs under its own SAVEPOINT inside a transaction it may share with other jobs.
        case transaction
        /// Runs alone on the writer, outside any transaction (PRAGMA, checkpoints).
        case exclusive
        /// Runs in a transaction of its own, without a savepoint (a body that changes a great
        /// many pages: under a savepoint SQLite would copy each one's old content to a
        /// statement journal in a temporary file).
        case alone
    }

    enum Outcome {
        case pending
        /// Finished: committed (nil) or failed with the error, nothing of it kept.
        case done((any Error)?)
        /// Its owner now holds the writer and runs the job itself (with the next ones).
        case lead
    }

    let kind: Kind
    var run: ((Connection) throws -> Void)?
    let wake = DispatchSemaphore(value: 0)
    var outcome = Outcome.pending

    init(_ kind: Kind, _ run: @escaping (Connection) throws -> Void) {
        self.kind = kind
        self.run = run
    }

    /// Runs the body (on the thread that holds the writer).
    func body(_ connection: Connection) throws {
        guard let run else { preconditionFailure("a writer job ran after it was done") }
        try run(connection)
    }
}

/// How many write transactions committed, and how many jobs they carried, since the database
/// was opened (``Database/groupCommitStatistics``).
public struct GroupCommitStatistics: Sendable, Equatable {
    /// Transactions committed (or rolled back as a whole) by the writer.
    public var transactions = 0
    /// Jobs those transactions carried (committed or failed alone under their savepoint).
    public var jobs = 0
    /// The most jobs one transaction carried.
    public var largestBatch = 0
    /// Database pages the writer wrote to the write-ahead log (frames; each is one page plus a
    /// 24-byte frame header in the WAL file): `SQLITE_DBSTATUS_CACHE_WRITE`, summed after
    /// every transaction.
    public var walFramesWritten = 0
}

/// Group commit on the single writer connection.
///
/// A caller that finds the writer free runs its job at once (one client alone pays nothing
/// extra). Callers that arrive meanwhile queue up; when the writer is handed on, the first of
/// them becomes the next leader and takes every queued transaction job, up to `maxBatch`, into
/// one `BEGIN IMMEDIATE … COMMIT`, each under its own SAVEPOINT in the order they queued: a job
/// that throws is rolled back to its savepoint and fails alone; the others commit together, and
/// each caller returns only after that COMMIT (so an acknowledged write is as durable as the
/// connection's `synchronous` setting makes a commit; with FULL one fsync serves the batch).
///
/// When a job's writes cannot be undone alone (SQLite rolled back the whole transaction itself
/// after a full disk or an I/O error, or ROLLBACK TO failed), the transaction is rolled back:
/// the jobs that had run fail with that error and the ones not yet run go back to the head of
/// the queue. A failing COMMIT fails every job from the first that succeeded on (a later job's
/// 412 or 409 may have been decided against those uncommitted writes). Nothing is acknowledged
/// unless committed.
///
/// Exclusive jobs (``Database/writeWithoutTransaction(_:)``) never share the writer: a batch
/// stops before one, and it runs alone when its turn comes.
final class WriterQueue: Sendable {
    private struct State {
        /// A leader holds the writer.
        var busy = false
        var waiting: [WriterJob] = []
        var statistics = GroupCommitStatistics()
    }

    private let state = Mutex(State())
    let maxBatch: Int

    init(maxBatch: Int) {
        precondition(maxBatch >= 1, "maxBatch must be at least 1")
        self.maxBatch = maxBatch
    }

    var statistics: GroupCommitStatistics { state.withLock { $0.statistics } }

    /// Jobs waiting for the writer (not counting the ones running).
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Runs `job` on `connection`, alone or in a batch, and returns when it is done; its
    /// `outcome` is then `.done`.
    func perform(_ job: WriterJob, on connection: Connection) {
        let leads = state.withLock { state in
            if state.busy {
                state.waiting.append(job)
                return false
            }
            state.busy = true
            return true
        }
        if !leads {
            job.wake.wait()
            guard case .lead = job.outcome else { return }
        }
        lead(from: job, on: connection)
    }

    /// Holds the writer: runs `first`'s batch, wakes its jobs, then hands the writer to the
    /// next queued job (or frees it). `first` is done when this returns.
    private func lead(from first: WriterJob, on connection: Connection) {
        var batch = [first]
        if first.kind == .transaction {
            // Only transaction jobs join; the batch stops before an exclusive or alone job.
            state.withLock { state in
                let room = maxBatch - 1
                let taken = state.waiting.prefix(room).prefix { $0.kind == .transaction }
                batch.append(contentsOf: taken)
                state.waiting.removeFirst(taken.count)
            }
        }
        let finished: ArraySlice<WriterJob>
        if first.kind == .exclusive {
            Self.runExclusive(first, on: connection)
            finished = batch[...]
        } else {
            finished = Self.runBatch(batch, on: connection)
            let unrun = batch[finished.endIndex...]
            let frames = Self.takePagesWritten(connection)
            if frames >= Self.renewAfterPages, !connection.isInTransaction {
                // A large transaction: start the next on a fresh handle (see `Connection.renew`).
                // If that cannot open, the writer goes on with the handle it has.
                try? connection.renew()
            }
            state.withLock { state in
                state.statistics.walFramesWritten += frames
                state.waiting.insert(contentsOf: unrun, at: 0)
                state.statistics.transactions += 1
                state.statistics.jobs += finished.count
                state.statistics.largestBatch = max(state.statistics.largestBatch, finished.count)
            }
        }
        for job in finished.dropFirst() { job.wake.signal() }
        let next = state.withLock { state -> WriterJob? in
            guard !state.waiting.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        if let next {
            next.outcome = .lead
            next.wake.signal()
        }
    }

    /// After a transaction that wrote this many pages (32 MiB of 4 KiB pages; an append of a
    /// few thousand albums, an archive import, a rebuild of the search index), the writer's
    /// handle is renewed: about a millisecond against the transaction's hundreds.
    static let renewAfterPages = 8192

    /// Pages `connection` wrote since the last call (and resets the count).
    private static func takePagesWritten(_ connection: Connection) -> Int {
        var current: Int32 = 0
        var highest: Int32 = 0
        guard sqlite3_db_status(connection.handle, SQLITE_DBSTATUS_CACHE_WRITE, &current, &highest, 1) == SQLITE_OK else { return 0 }
        return Int(current)
    }

    private static func runExclusive(_ job: WriterJob, on connection: Connection) {
        if connection.isInTransaction {
            // Left open by an earlier body (e.g. a raw BEGIN); never leak it into this one.
            try? connection.run("ROLLBACK")
        }
        do {
            try job.body(connection)
            job.outcome = .done(nil)
        } catch {
            job.outcome = .done(error)
        }
    }

    /// Runs `batch` in one transaction, each job under its own savepoint, and sets every run
    /// job's outcome. Returns the jobs that ran (a prefix: all of them unless SQLite rolled the
    /// transaction back midway, when the rest must be queued again).
    private static func runBatch(_ batch: [WriterJob], on connection: Connection) -> ArraySlice<WriterJob> {
        if connection.isInTransaction {
            try? connection.run("ROLLBACK")
        }
        if batch.count == 1, let job = batch.first {
            // Alone (one client, or the writer idle): no savepoint needed, the transaction is its own.
            do {
                try connection.transaction(.immediate) { try job.body($0) }
                job.outcome = .done(nil)
            } catch {
                job.outcome = .done(error)
            }
            return batch[...]
        }
        do {
            try connection.run(TransactionKind.immediate.beginSQL)
        } catch {
            for job in batch { job.outcome = .done(error) }
            return batch[...]
        }
        // Jobs from the first that succeeded on: their verdicts (a success, or a 412/409 decided
        // against that success's uncommitted writes) stand only if the transaction commits.
        var provisional: [WriterJob] = []
        for (index, job) in batch.enumerated() {
            do {
                try connection.run("SAVEPOINT group_commit_job")
                try job.body(connection)
                try connection.run("RELEASE group_commit_job")
                job.outcome = .done(nil)
                provisional.append(job)
            } catch {
                job.outcome = .done(error)
                if !provisional.isEmpty { provisional.append(job) }
                // Undo this job alone; when that is impossible (SQLite rolled the transaction back
                // itself after SQLITE_FULL or an I/O error, or the ROLLBACK TO failed), nothing of
                // the batch may commit: what ran fails, what did not run goes back to the queue.
                let undone = connection.isInTransaction
                    && (try? connection.run("ROLLBACK TO group_commit_job")) != nil
                    && (try? connection.run("RELEASE group_commit_job")) != nil
                if !undone {
                    if connection.isInTransaction { try? connection.run("ROLLBACK") }
                    for done in provisional { done.outcome = .done(error) }
                    return batch[...index]
                }
            }
        }
        do {
            try connection.run("COMMIT")
        } catch {
            if connection.isInTransaction { try? connection.run("ROLLBACK") }
            for job in provisional { job.outcome = .done(error) }
        }
        return batch[...]
    }
}
