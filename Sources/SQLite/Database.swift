import CSQLite
import Dispatch
import Essentials
import Glibc
import Synchronization

/// A database shared between threads: one writer connection and a pool of read-only readers.
///
/// All calls are synchronous and meant for worker threads (no async here).
/// - ``write(_:)`` runs the body on the one writer connection, under its own SAVEPOINT in a
///   `BEGIN IMMEDIATE` transaction that it shares with the writes queued behind the writer
///   meanwhile (group commit, see ``WriterQueue``: up to `maxBatch` bodies per commit; a body
///   that throws fails alone). It returns after that transaction committed.
/// - ``read(_:)`` borrows a reader (waiting at most `readerTimeout` for one) and runs the body
///   in a deferred transaction, so every query in the body sees the same snapshot. WAL lets
///   readers proceed while the writer writes.
/// - Not re-entrant: calling `write` from inside a `write` body deadlocks (the writer is not
///   recursive), and nested `read`s can exhaust the pool. Use the `Connection` you were given.
///
/// `@unchecked Sendable` is justified by the locks guarding every non-Sendable member:
/// - `writer` is only touched by the thread that holds it through `writerQueue` (one leader at
///   a time; the connection is handed to callers' non-Sendable closures, so it cannot live
///   inside a `Mutex`).
/// - `readers[i]` is only touched by the thread that acquired index `i` from `pool`
///   (`ReaderPool`: a `Mutex`-protected free list plus a counting semaphore), until it releases it.
/// `readers` itself is only mutated in `deinit`. All other stored properties are immutable
/// and Sendable.
public final class Database: @unchecked Sendable {
    public struct Configuration: Sendable {
        /// Settings for every connection (writer and readers).
        public var connection: Connection.Options
        /// Number of read-only connections. With 0, reads use the writer connection (serialised).
        public var readerCount: Int
        /// Longest time ``Database/read(_:)`` waits for a free reader before throwing `SQLITE_BUSY`.
        public var readerTimeout: Duration
        /// Most ``Database/write(_:)`` bodies committed in one transaction (group commit);
        /// 1 commits each alone.
        public var maxBatch: Int

        public init(
            connection: Connection.Options = Connection.Options(),
            readerCount: Int = 4,
            readerTimeout: Duration = .seconds(10),
            maxBatch: Int = 64
        ) {
            self.connection = connection
            self.readerCount = readerCount
            self.readerTimeout = readerTimeout
            self.maxBatch = max(1, maxBatch)
        }
    }

    public let path: String
    public let configuration: Configuration
    /// The database's page size in bytes (a WAL frame is one page plus a 24-byte header).
    public let pageSize: Int
    private let writerQueue: WriterQueue
    private let writer: Connection
    /// `var` only so `deinit` can close the readers before the writer (see there).
    private var readers: [Connection]
    private let pool: ReaderPool

    /// Opens (creating if needed) the database at `path`, applies `migrator`'s pending
    /// migrations with the writer, then opens the read-only readers.
    public init(path: String, migrator: Migrator = Migrator(), configuration: Configuration = Configuration()) throws {
        precondition(configuration.readerCount >= 0, "readerCount must not be negative")
        let writerConnection = try Connection(path: path, mode: .readWriteCreate, options: configuration.connection)
        try migrator.migrate(writerConnection)
        // A migration may rebuild an index over every row (the search index): start afresh.
        try writerConnection.renew()
        pageSize = try writerConnection.scalar("PRAGMA page_size", as: Int.self) ?? 4096
        var readers: [Connection] = []
        readers.reserveCapacity(configuration.readerCount)
        for _ in 0..<configuration.readerCount {
            readers.append(try Connection(path: path, mode: .readOnly, options: configuration.connection))
        }
        self.path = path
        self.configuration = configuration
        self.writer = writerConnection
        self.readers = readers
        self.pool = ReaderPool(count: configuration.readerCount)
        self.writerQueue = WriterQueue(maxBatch: configuration.maxBatch)
    }

    deinit {
        // Close the readers first: the last connection to close checkpoints the WAL and
        // deletes it, and only the writer may do so (readers are read-only).
        readers.removeAll()
    }

    /// Runs `body` on the writer inside a `BEGIN IMMEDIATE … COMMIT` transaction, under a
    /// SAVEPOINT of its own: when it throws, what it did is rolled back and the error rethrown;
    /// when it returns, this returns after the transaction committed. Bodies queued while the
    /// writer is busy share one transaction (group commit, in the order they queued, see
    /// ``WriterQueue``), so a body must not depend on being alone in its transaction. Nested
    /// `transaction` calls in `body` become savepoints.
    ///
    /// Errors: the body's own; or, when the transaction as a whole failed (BEGIN, COMMIT, a
    /// full disk that made SQLite roll everything back), that error, and nothing was kept.
    public func write<T>(_ body: (Connection) throws -> T) throws -> T {
        try perform(.transaction, body)
    }

    /// `write` in a transaction of its own, never shared with queued writes: for a body that
    /// changes a great many pages (an import, a large delete), which under a savepoint would
    /// copy each page's old content to a statement journal (a temporary file).
    public func writeAlone<T>(_ body: (Connection) throws -> T) throws -> T {
        try perform(.alone, body)
    }

    /// Runs a setting (`PRAGMA cache_size=...`) on the writer now and on every handle it
    /// renews (``Connection/runForLife(_:)``).
    public func setWriterSetting(_ sql: String) throws {
        try writeWithoutTransaction { try $0.runForLife(sql) }
    }

    /// Runs `body` on the writer with no surrounding transaction (VACUUM, PRAGMA, checkpoints…),
    /// alone: never batched with other writes.
    public func writeWithoutTransaction<T>(_ body: (Connection) throws -> T) throws -> T {
        try perform(.exclusive, body)
    }

    /// Hands `body` to the writer queue and waits for it to be done.
    private func perform<T>(_ kind: WriterJob.Kind, _ body: (Connection) throws -> T) throws -> T {
        var value: T?
        let outcome = withoutActuallyEscaping(body) { body in
            let job = WriterJob(kind) { connection in value = try body(connection) }
            writerQueue.perform(job, on: writer)
            // Done: the body goes with this call (the queue may still hold the job a moment).
            job.run = nil
            return job.outcome
        }
        guard case let .done(error) = outcome else { preconditionFailure("a writer job returned unfinished") }
        if let error { throw error }
        return value!
    }

    /// Transactions committed by the writer and the bodies they carried so far (group commit).
    public var groupCommitStatistics: GroupCommitStatistics { writerQueue.statistics }

    /// Write bodies waiting for the writer right now (tests observe a batch forming).
    public var queuedWriteCount: Int { writerQueue.waitingCount }

    /// Installs a ``WALFrameCounter`` on the writer connection and returns it. From then on
    /// SQLite no longer checkpoints by itself inside commits: the caller checkpoints.
    public func installWALFrameCounter() -> WALFrameCounter {
        let counter = WALFrameCounter()
        _ = try? writeWithoutTransaction { $0.installWALHook(counter) }
        return counter
    }

    /// Copies the whole WAL into the database and restarts it from its beginning
    /// (`wal_checkpoint(RESTART)`), holding the writer lock so no commit lands meanwhile.
    ///
    /// Readers of an older snapshot hold a restart up, and while the WAL is being copied, new
    /// readers may join an old snapshot's read mark and keep it busy for ever (with four
    /// readers and steady reads, measured: restarts failed for seconds). So new read
    /// transactions of this database are held back for the moment of the restart, and the
    /// ones in flight are waited for at most `readerWait`; when one has already been out for
    /// `readerWait` (an export), the restart gives up at once instead of stalling every read. Other processes' readers are polled every 100 µs up to
    /// `readerWait` (SQLite's own busy handler sleeps 1, 2, 5, 10… ms, which commits queued
    /// on the lock would pay for). A checkpoint running on another connection makes
    /// SQLite refuse at once, without its busy handler; that is retried every 100 µs for at
    /// most `checkpointWait` (default: `readerWait`). Returns `false` when a wait ran out: the
    /// WAL was then not restarted. With `truncate`, the WAL file is also cut to zero bytes
    /// (`wal_checkpoint(TRUNCATE)`).
    public func restartWAL(readerWait: Duration, checkpointWait: Duration? = nil, truncate: Bool = false) throws -> Bool {
        let sql = truncate ? "PRAGMA wal_checkpoint(TRUNCATE)" : "PRAGMA wal_checkpoint(RESTART)"
        let polls = max(1, Int(readerWait.clampedMilliseconds) * 10)
        let normalTimeout = configuration.connection.busyTimeout.clampedMilliseconds
        let deadline = ContinuousClock.now + (checkpointWait ?? readerWait)
        return try writeWithoutTransaction { db in
            let (held, all) = pool.closeGate(
                until: .now() + .nanoseconds(Int(readerWait.clampedMilliseconds) * 1_000_000), longReader: readerWait)
            defer { pool.openGate(releasing: held) }
            guard all else { return false }
            sqlite3_busy_handler(db.handle, { context, count in
                guard Int(count) < Int(bitPattern: context) else { return 0 }
                usleep(100)
                return 1
            }, UnsafeMutableRawPointer(bitPattern: polls))
            defer { sqlite3_busy_timeout(db.handle, normalTimeout) } // reinstalls the default handler
            while true {
                let started = ContinuousClock.now
                let busy = try db.firstRow(sql) { try $0.int(0) }
                if busy == 0 { return true }
                let now = ContinuousClock.now
                // A refusal that took a while was readers outlasting `readerWait`: give up.
                if now >= deadline || now - started >= readerWait / 2 { return false }
                usleep(100)
            }
        }
    }

    /// Reads that found every reader busy and waited for one, and those that gave up
    /// (`readerTimeout`), since the database was opened.
    public var readerPoolStatistics: (waits: Int, timeouts: Int) { (pool.waits, pool.timeouts) }

    /// Runs `body` on a read-only connection inside a deferred transaction, so all its queries
    /// see one consistent snapshot. Throws `SQLITE_BUSY` if no reader frees up within
    /// `configuration.readerTimeout` (an ``UnavailableDependency``: a server answers it 503 with
    /// `Retry-After`). Writes in `body` fail with `SQLITE_READONLY`.
    ///
    /// When the calling thread has a ``QueryBudget`` (``QueryBudget/current``), the read obeys
    /// it: it does not start when the budget's request was cancelled, and its statements are
    /// stopped (SQLite's progress handler, see ``Connection/withProgressCheck(every:_:_:)``)
    /// once the time limit has passed or the request is cancelled; it then throws
    /// ``QueryInterrupted``. Only reads on a reader connection are stopped (never a read that
    /// runs on the writer for want of readers: it may share the writer's transaction).
    public func read<T>(_ body: (Connection) throws -> T) throws -> T {
        let budget = readers.isEmpty ? nil : QueryBudget.current
        if let budget, let reason = budget.interruption() { throw budget.stopped(reason) }
        guard !readers.isEmpty else {
            return try writeWithoutTransaction { try $0.transaction(.deferred, body) }
        }
        guard let index = pool.acquire(timeout: configuration.readerTimeout) else {
            throw SQLiteError(
                extendedCode: SQLITE_BUSY,
                message: "no reader connection became free within \(configuration.readerTimeout)"
            )
        }
        defer { pool.release(index) }
        let reader = readers[index]
        if reader.isInTransaction {
            try? reader.run("ROLLBACK") // see writeWithoutTransaction
        }
        guard let budget else { return try reader.transaction(.deferred, body) }
        budget.begin()
        do {
            return try reader.transaction(.deferred) { db in
                try db.withProgressCheck(every: Self.progressSteps, { budget.interruption() != nil }, body)
            }
        } catch let error as SQLiteError where error.isInterrupted {
            throw budget.stopped(budget.interruption() ?? .cancelled)
        }
    }

    /// Virtual-machine steps between two looks at a read's ``QueryBudget``: a few tens of
    /// microseconds of work, so a stop comes within well under a millisecond, at the cost of an
    /// atomic load and a clock read (about 30 ns) per look.
    static let progressSteps: Int32 = 4096
}
