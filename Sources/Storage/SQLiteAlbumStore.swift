import BlueLibraryAPI
import Library
import SQLite
import ServerRecords
import Synchronization

/// `AlbumStore` on SQLite: one database file holding every library.
///
/// - `write` runs its body on the single writer connection, under its own SAVEPOINT in a
///   `BEGIN IMMEDIATE` transaction shared with the writes that queued behind the writer
///   meanwhile (group commit, up to `maxBatch`); it returns after that transaction committed,
///   and rethrows the body's error unchanged after rolling back to the savepoint (the other
///   writes of the batch are not affected).
/// - `read` runs its body in one deferred transaction on a pooled read-only connection (WAL:
///   readers never wait for the writer and see one snapshot).
/// - Durability: WAL with `synchronous=NORMAL` by default (a committed write survives a
///   killed process; a power cut may lose the last commits); `.full` syncs every commit.
///
/// The order of albums is kept with two levels of sparse keys (see `SparseOrder.swift`),
/// so inserting or deleting anywhere costs O(bucket size) at worst and finding the album at an
/// index costs one scan of the small bucket table plus one bounded index step.
public final class SQLiteAlbumStore: AlbumStore {
    public struct Configuration: Sendable {
        public enum Durability: Sendable {
            /// WAL + `synchronous=NORMAL`: survives process crashes, not necessarily power loss.
            case normal
            /// WAL + `synchronous=FULL`: every commit is synced to disk before it returns.
            case full
        }

        public var durability: Durability
        /// Read-only connections in the pool (0: reads use the writer, serialised).
        public var readerCount: Int
        /// How long a read waits for a free reader connection.
        public var readerTimeout: Duration
        /// How long a statement waits for a lock held by another process.
        public var busyTimeout: Duration
        /// Albums per bucket that appends fill up to; a bucket splits above twice this and is
        /// merged into a neighbour below a quarter of it. Small values (4…8) exercise splits
        /// and merges in tests; 256…1024 suit large libraries.
        public var bucketSize: Int
        /// Page cache of the writer connection, in KiB (SQLite's default is 2000).
        public var writerCacheKiB: Int
        /// Spacing of the sparse order keys. Leave the default; tests shrink it to force the
        /// rare renumbering paths.
        public var keySpacing: KeySpacing
        /// Who copies the WAL back into the database file.
        public var checkpointing: Checkpointing
        /// Bytes kept aside in `<database>.reserve` and given back when the disk is full, so
        /// the WAL can still be checkpointed and truncated (see `DiskReserve`); 0 for none.
        public var diskReserveBytes: Int
        /// Saved states (`PUT /state?client=`) kept per library; past it the least recently
        /// saved go first, so new client names cannot grow the table without bound. At least 1.
        public var maxSavedStates: Int
        /// Most write calls committed together in one transaction when they queue up behind the
        /// writer (group commit, see `Database.write`); 1 commits each alone.
        public var maxBatch: Int
        /// Matches of a search up to which its pages start from the search index and sort them,
        /// and up to which they walk the order filtered by the index's matches (see
        /// `SearchIndex`). Leave the defaults; tests move them to take each path.
        public var searchIndexLimits: (sort: Int, filter: Int)

        public init(
            durability: Durability = .normal,
            readerCount: Int = 4,
            readerTimeout: Duration = .seconds(10),
            busyTimeout: Duration = .seconds(5),
            bucketSize: Int = 512,
            writerCacheKiB: Int = 32 * 1024,
            keySpacing: KeySpacing = KeySpacing(),
            checkpointing: Checkpointing = .background(),
            diskReserveBytes: Int = 32 << 20,
            maxSavedStates: Int = 10_000,
            maxBatch: Int = 64,
            searchIndexLimits: (sort: Int, filter: Int) = (2_000, 8_000)
        ) {
            self.durability = durability
            self.readerCount = readerCount
            self.readerTimeout = readerTimeout
            self.busyTimeout = busyTimeout
            self.bucketSize = bucketSize
            self.writerCacheKiB = writerCacheKiB
            self.keySpacing = keySpacing
            self.checkpointing = checkpointing
            self.diskReserveBytes = diskReserveBytes
            self.maxSavedStates = max(1, maxSavedStates)
            self.maxBatch = max(1, maxBatch)
            self.searchIndexLimits = (max(0, searchIndexLimits.sort), max(0, searchIndexLimits.filter))
        }
    }

    /// When the WAL is checkpointed (see `Checkpointer`).
    public enum Checkpointing: Sendable {
        /// SQLite's default: inside the commit that grows the WAL past 1000 pages.
        case automatic
        /// On a background thread every `interval`, or after `wakeAfterWrites` commits, or once
        /// the WAL holds `resetFrames` pages; past `resetFrames` the thread also restarts the
        /// WAL (see `Checkpointer`). The thread runs at nice 19; should it fall behind (a CPU
        /// saturated for a long time), the commit that takes the WAL past `fallbackFrames`
        /// pages restarts it itself, so the WAL stays bounded. Readers of an older snapshot
        /// hold a restart up for at most `readerWait`, and the commit that asked for it waits
        /// that long: 20 ms, as a flood of searches keeps readers of 100 ms and more in flight
        /// (with 200 ms the innocent adds of `scripts/bench --scenario fairness` had a p99 of
        /// 201 ms during the attack; with 20 ms, 3.9 ms). A restart that gives up is tried
        /// again 250 ms later; past `fallbackFrames` the wait is a second.
        case background(
            interval: Duration = .milliseconds(250), wakeAfterWrites: Int = 256, resetFrames: Int = 2048,
            fallbackFrames: Int = 8192, readerWait: Duration = .milliseconds(20))
    }

    /// Spacing of the sparse order keys (see `SparseOrder.swift`; shared with PostgreSQL).
    public typealias KeySpacing = SparseKeySpacing

    /// How often the ordering had to do its rarer work (see `OrderingCounters`).
    public typealias OrderingCounters = AlbumOrderingCounters

    public let path: String
    public let configuration: Configuration
    let database: Database
    /// Row ids of library names seen committed; rows are never deleted (a deleted library is
    /// a tombstone row, see `liveRow`), so an entry never goes stale.
    private let libraryRows = Mutex<[String: Int64]>([:])
    private let checkpointer: Checkpointer?
    private let reserve: DiskReserve
    /// Frames in the WAL after the writer's latest commit (with `.background` checkpointing).
    private let walFrames: WALFrameCounter?
    /// `resetFrames`, `fallbackFrames` and `readerWait` of `.background` checkpointing.
    private let resetFrames: Int
    private let fallbackFrames: Int
    private let readerWait: Duration
    /// After a WAL restart that a reader held up, the next try waits until then.
    private let nextRestart = Mutex<ContinuousClock.Instant?>(nil)
    /// WAL restarts made by committing writers, for tests and diagnostics: asked for by the
    /// checkpoint thread, and past `fallbackFrames`.
    private let requestedRestarts = Atomic<Int>(0)
    private let fallbackRestarts = Atomic<Int>(0)
    /// The writer's transaction count when `didCommit` last did its work (see there).
    private let maintainedTransaction = Atomic<Int>(-1)
    /// What the album engine's transactions share: the bucket layout, limits, counters.
    let engine: EngineContext

    /// Identifiers of the schema migrations, in the order they are applied.
    public static var migrationIdentifiers: [String] { Schema.migrator.identifiers }

    /// Opens (creating if needed) the database at `path` and applies pending migrations.
    public init(path: String, configuration: Configuration = Configuration()) throws {
        let spacing = configuration.keySpacing
        spacing.validate(bucketSize: configuration.bucketSize)
        let options = Connection.Options(
            synchronous: configuration.durability == .full ? .full : .normal,
            busyTimeout: configuration.busyTimeout,
            statementCacheCapacity: 128)
        database = try Database(
            path: path,
            migrator: Schema.migrator,
            configuration: Database.Configuration(
                connection: options, readerCount: configuration.readerCount,
                readerTimeout: configuration.readerTimeout, maxBatch: configuration.maxBatch))
        self.path = path
        self.configuration = configuration
        engine = EngineContext(
            dialect: .sqlite, bucketSize: configuration.bucketSize, spacing: spacing,
            maxSavedStates: configuration.maxSavedStates,
            searchIndexLimits: SearchIndex.Limits(configuration.searchIndexLimits))
        reserve = DiskReserve(path: path + ".reserve", size: max(0, configuration.diskReserveBytes))
        let cacheKiB = configuration.writerCacheKiB
        if cacheKiB > 0 {
            try database.setWriterSetting(SQL.cacheSize(kibibytes: cacheKiB))
        }
        try database.setWriterSetting(SQL.journalSizeLimit)
        switch configuration.checkpointing {
        case .automatic:
            checkpointer = nil
            walFrames = nil
            fallbackFrames = .max
            resetFrames = .max
            readerWait = .zero
        case .background(let interval, let wakeAfterWrites, let resetFrames, let fallbackFrames, let readerWait):
            // Replaces SQLite's in-commit checkpoint: from here on this store checkpoints.
            walFrames = database.installWALFrameCounter()
            self.fallbackFrames = max(1, fallbackFrames)
            self.readerWait = readerWait
            self.resetFrames = max(1, resetFrames)
            checkpointer = Checkpointer(
                path: path, options: options, interval: interval, wakeAfterWrites: wakeAfterWrites,
                resetFrames: resetFrames, fallbackFrames: fallbackFrames, walFrames: walFrames)
        }
        try SearchTextBackfill.run { batch in try committing(batch) }
    }

    deinit {
        checkpointer?.stop()
    }

    /// Copies the write-ahead log into the database and truncates it (`wal_checkpoint(TRUNCATE)`),
    /// so the next start need not read a large WAL. For graceful shutdown, when no reads run.
    public func checkpointAndTruncateWAL() throws {
        try database.writeWithoutTransaction { db in try db.run(SQL.checkpointAndTruncate) }
    }

    /// True from a write that found the disk full until a write succeeds again (reads go on).
    public var isDiskFull: Bool { reserve.isFull }

    /// True while the disk reserve file is allocated.
    public var hasDiskReserve: Bool { reserve.isPresent }

    /// True when `error` (as thrown by this store) means the disk or the quota is full.
    public static func isDiskFull(_ error: any Error) -> Bool {
        (error as? SQLiteError)?.isFull ?? false
    }

    /// The first write to find the disk full frees the reserve and folds the WAL into the
    /// database through the space it freed, truncating the WAL file, so what was committed is
    /// in the database file and the WAL's space is free for the next writes.
    private func diskBecameFull() {
        guard reserve.diskBecameFull() else { return }
        _ = try? database.restartWAL(readerWait: .milliseconds(500), truncate: true)
    }

    /// Background checkpoints run so far (0 with `.automatic`).
    public var backgroundCheckpointCount: Int { checkpointer?.checkpointCount ?? 0 }

    /// WAL restarts so far: asked for by the checkpoint thread, and made past `fallbackFrames`
    /// because the thread fell behind.
    public var walRestartCounts: (requested: Int, fallback: Int) {
        (requestedRestarts.load(ordering: .relaxed), fallbackRestarts.load(ordering: .relaxed))
    }

    /// After a commit: wakes the checkpoint thread when due, and restarts the WAL when the
    /// thread asked for it (it has just copied most of it) or when the WAL grew past
    /// `fallbackFrames` (the thread is starved). A requested restart that failed is tried again
    /// 250 ms later at the earliest; past `fallbackFrames` every commit tries.
    private func didCommit() {
        guard let walFrames, let checkpointer else { return }
        // Once per committed transaction, not once per write it carried (group commit wakes
        // them all at once, and they would all see the same frames and queue a restart each).
        let transaction = database.groupCommitStatistics.transactions
        guard maintainedTransaction.exchange(transaction, ordering: .relaxed) != transaction else { return }
        let frames = walFrames.frames
        checkpointer.didCommit(walFrames: frames)
        let requested = frames >= resetFrames && checkpointer.restartWanted
        let fallback = frames >= fallbackFrames
        guard requested || fallback else { return }
        let started = ContinuousClock.now
        // The pause after a requested restart that failed does not hold up the fallback: it
        // did, and the WAL grew past the bound by the commits of those 250 ms.
        guard fallback || nextRestart.withLock({ next in next.map { started >= $0 } ?? true }) else { return }
        // Past `fallbackFrames`, wait longer (commits stall, the WAL stops growing): for
        // readers to drain on a saturated CPU (1 s), and for a checkpoint the nice-19 thread is
        // running (5 s). A long reader (an export) makes the try give up at once, without a wait.
        let restarted = (try? database.restartWAL(
            readerWait: fallback ? max(readerWait, .seconds(1)) : readerWait,
            checkpointWait: fallback ? .seconds(5) : readerWait)) == true
        if restarted {
            checkpointer.restartDone()
            if requested && !fallback {
                requestedRestarts.add(1, ordering: .relaxed)
            } else {
                fallbackRestarts.add(1, ordering: .relaxed)
            }
            nextRestart.withLock { $0 = nil }
        } else if !fallback {
            nextRestart.withLock { $0 = started + .milliseconds(250) }
        }
    }

    /// Counters of splits, merges and renumberings so far.
    public var orderingCounters: OrderingCounters { engine.counters.withLock { $0 } }

    public func read<T>(_ libraries: [LibraryID], _ body: ([any AlbumStoreReader]) throws -> T) throws -> T {
        Self.checkDistinct(libraries)
        return try database.read { db in
            let transactions = try libraries.map { library in
                let row = try liveRow(library, db)
                return SQLiteTransaction(engine: LibraryTransaction(db, library: row.id, context: engine, soleWriter: false, known: row))
            }
            return try body(transactions)
        }
    }

    public func write<T>(_ libraries: [LibraryID], _ body: ([any AlbumStoreWriter]) throws -> T) throws -> T {
        Self.checkDistinct(libraries)
        return try committing { db in
            let soleWriter = libraries.count == 1
            let transactions = try libraries.map { library in
                let row = try liveRow(library, db)
                return SQLiteTransaction(engine: LibraryTransaction(db, library: row.id, context: engine, soleWriter: soleWriter, known: row))
            }
            let result = try body(transactions)
            for transaction in transactions { try transaction.engine.finish() }
            return result
        }
    }

    /// `write` in a transaction of its own (see `AlbumStore.writeAlone`).
    public func writeAlone<T>(_ library: LibraryID, _ body: (any AlbumStoreWriter) throws -> T) throws -> T {
        try committing(alone: true) { db in
            let row = try liveRow(library, db)
            let transaction = SQLiteTransaction(engine: LibraryTransaction(db, library: row.id, context: engine, soleWriter: true, known: row))
            let result = try body(transaction)
            try transaction.engine.finish()
            return result
        }
    }

    /// Runs `body` in one write transaction on the writer, with the disk-full handling and the
    /// checkpointing every commit needs; `alone`: in a transaction of its own (never batched).
    ///
    /// A request's `Idempotency-Key` not claimed yet (``IdempotencyKeyClaim/pending``) is
    /// claimed in the same transaction, under `body`'s savepoint: it commits with the write.
    func committing<T>(alone: Bool = false, _ body: (Connection) throws -> T) throws -> T {
        let claim = IdempotencyKeyClaim.pending
        let claiming = { (db: Connection) throws -> T in
            if let claim { try ServerRecordsSQL.claim(claim, db) }
            return try body(db)
        }
        let result: T
        do {
            result = try alone ? database.writeAlone(claiming) : database.write(claiming)
        } catch where Self.isDiskFull(error) {
            diskBecameFull()
            throw error
        }
        claim?.markCommitted()
        reserve.writeSucceeded()
        didCommit()
        return result
    }

    private static func checkDistinct(_ libraries: [LibraryID]) {
        precondition(libraries.count < 2 || Set(libraries).count == libraries.count, "libraries must not repeat")
    }

    /// The row of `library` inside the transaction on `db`, which must show it live: its id,
    /// and its album count, version and sort articles, read in one statement (a transaction of
    /// the library would otherwise read them one at a time).
    ///
    /// The name-to-row cache is never stale: library rows are never removed (a deleted library
    /// is a tombstone, and creating it again reuses its row, see `SchemaHistory` v7), so only the
    /// row is read each time (one primary-key lookup, in this transaction's snapshot, so another
    /// process's delete is seen too).
    /// - Throws: `LibraryError.libraryNotFound` when there is no live library `library`.
    func liveRow(_ library: LibraryID, _ db: Connection) throws -> KnownLibraryRow {
        let id: Int64
        if let known = libraryRows.withLock({ $0[library.rawValue] }) {
            id = known
        } else {
            guard let row = try db.scalar(SQL.libraryID, [.text(library.rawValue)], as: Int64.self) else {
                throw LibraryError.libraryNotFound(library)
            }
            // Committed unless an earlier write of the same group-commit batch created it (then it
            // is live only if that commits). No HTTP path writes a library before a committed read
            // found it (`Libraries.facade`), so the row read here is committed and permanent.
            remember(library, row: row)
            id = row
        }
        guard let row = try db.firstRow(SQL.libraryRowByID, [.integer(id)], { row -> KnownLibraryRow? in
            guard try row.bool(0) else { return nil }
            return KnownLibraryRow(
                id: id, albumCount: try row.int(1), version: try row.int64(2), sortArticles: SortArticles(stored: try row.string(3)))
        }) ?? nil else { throw LibraryError.libraryNotFound(library) }
        return row
    }

    /// Caches the row of `library` (a row once seen for a name is its row forever).
    func remember(_ library: LibraryID, row: Int64) {
        libraryRows.withLock { $0[library.rawValue] = row }
    }

    // MARK: - Consistency

    /// A summary of one library's ordering structure (see `AlbumOrderingReport`).
    public typealias OrderingReport = AlbumOrderingReport

    /// Checks the ordering bookkeeping of `library` against the album rows (every bucket's
    /// size, the library's count, no empty bucket, no shared position) and the search index
    /// against every album's `search_text` (FTS5's 'integrity-check' of an external-content
    /// index), and returns a summary. Scans the whole library and the whole index: for tests
    /// and maintenance, not for requests.
    /// - Throws: `StorageError.corrupt` describing the first broken invariant.
    public func checkConsistency(_ library: LibraryID) throws -> OrderingReport {
        let report = try database.read { db in try AlbumOrderingReport.check(library, db) }
        do {
            try database.writeWithoutTransaction { db in try db.run(SQL.checkSearchIndex) }
        } catch let error as SQLiteError {
            throw StorageError(.corrupt, "the search index does not match the albums' search text: \(error)")
        }
        return report
    }
}
