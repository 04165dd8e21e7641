import BlueLibraryAPI
import Essentials
import Library
import Postgres
import ServerRecords
import Synchronization

/// `AlbumStore` on PostgreSQL: every library in one database that several instances (processes)
/// share, over a bounded pool of connections (`PostgresPool`).
///
/// The album engine is SQLite's (`LibraryTransaction`, `SparseOrder`, …) over a
/// `PostgresSession`: the same statements, the same two levels of sparse keys, so an insert or
/// delete anywhere costs O(bucket size) at worst here too. What differs is in `SQLDialect`.
///
/// Correct across instances — versions and the order are decided in the database:
/// - `write` runs in one READ COMMITTED transaction whose first statements lock the written
///   libraries' rows (`SELECT … FOR UPDATE`, in row-id order, so writers through any instance
///   serialise per library and two multi-library writes never deadlock). Every later statement
///   sees what the previous writer of those libraries committed; versions (`version + 1` on the
///   locked row), the album count, bucket keys, undo sequence numbers and the change feed are
///   read and written under that lock, so no two commits get one version and none is lost.
///   Bucket ids come from the sequence `bucket_ids` (buckets of different libraries are made
///   concurrently).
/// - `read` runs in one REPEATABLE READ READ ONLY transaction: one snapshot.
/// - A committed write that bumped a library's version has notified
///   `pg_notify('bluelibrary_commits', <library id>)` inside its transaction (delivered at the
///   commit, only if it commits); catalog and view changes notify `bluelibrary_catalog`.
/// - `isShared` is true: facades read `versions(of:)` (one statement) instead of trusting what
///   they remember.
///
/// Errors: a `PostgresError` (an unreachable server, an exhausted pool, a statement timeout) is
/// thrown unchanged, so the facade wraps it in `LibraryError.storage` and the server can answer
/// 503 when it `isUnavailable`; a write aborted by a deadlock or serialization failure is run
/// once more first; a value the server refuses as data (class 22) is `LibraryError.malformed`. An album id another library holds is `LibraryError.conflict`
/// naming the album and that library (the insert says `ON CONFLICT DO NOTHING`, so the
/// transaction can still ask where the album is); the body's own errors come back unchanged.
public final class PostgresAlbumStore: AlbumStore {
    public struct Configuration: Sendable {
        /// Albums per bucket that appends fill up to (see `SQLiteAlbumStore.Configuration`).
        public var bucketSize: Int
        /// Spacing of the sparse order keys. Leave the default; tests shrink it.
        public var keySpacing: SparseKeySpacing
        /// Saved states kept per library; past it the least recently saved go first. At least 1.
        public var maxSavedStates: Int

        public init(bucketSize: Int = 512, keySpacing: SparseKeySpacing = SparseKeySpacing(), maxSavedStates: Int = 10_000) {
            self.bucketSize = bucketSize
            self.keySpacing = keySpacing
            self.maxSavedStates = max(1, maxSavedStates)
        }
    }

    /// The channel a commit that bumped a library's version notifies, with the library's id.
    public static let commitChannel = "bluelibrary_commits"
    /// The channel a change of the catalog (libraries) or of a view definition notifies.
    public static let catalogChannel = "bluelibrary_catalog"

    public let pool: PostgresPool
    public let configuration: Configuration
    let engine: EngineContext
    /// The version reads in flight and the next batch (``versions(of:)``).
    private let versionReads = ReadBatcher<String, VersionAt>()
    /// Read replicas that reads of requests may use (nil: every read goes to `pool`).
    public let replicas: PostgresReplicas?
    /// The version reads of each replica (same order), shared as ``versionReads`` are.
    private let replicaVersionReads: [ReadBatcher<String, VersionAt>]
    /// The newest position a commit through this store reached (kept while there are replicas).
    private let latestCommit = Atomic<UInt64>(0)
    /// Writes of one library waiting for this instance's transaction of it (``write(_:_:)``).
    /// At most 32 writes per transaction: each savepoint that writes takes a subtransaction id,
    /// and past 64 in one transaction PostgreSQL's snapshots slow down for every session
    /// (the per-backend subtransaction cache overflows).
    private let writeGroups = PostgresWriteGroups(maxBatch: 32)

    /// Opens the store on `pool` and brings the schema up to date (`PostgresSchema.migrate`,
    /// under an advisory lock, so several instances may start at once).
    /// - Throws: the `PostgresError` of an unreachable server or a failed migration.
    public init(pool: PostgresPool, replicas: PostgresReplicas? = nil, configuration: Configuration = Configuration()) throws {
        configuration.keySpacing.validate(bucketSize: configuration.bucketSize)
        self.pool = pool
        self.replicas = replicas
        replicaVersionReads = (replicas?.replicas ?? []).map { _ in ReadBatcher() }
        self.configuration = configuration
        engine = EngineContext(
            dialect: .postgres, bucketSize: configuration.bucketSize, spacing: configuration.keySpacing,
            maxSavedStates: configuration.maxSavedStates)
        _ = try PostgresSchema.migrate(pool: pool)
        try SearchTextBackfill.run { batch in try writing(batch) }
    }

    public var isShared: Bool { true }

    /// Counters of splits, merges and renumberings made through this store (this instance).
    public var orderingCounters: AlbumOrderingCounters { engine.counters.withLock { $0 } }

    // MARK: - Transactions

    public func read<T>(_ libraries: [LibraryID], _ body: ([any AlbumStoreReader]) throws -> T) throws -> T {
        Self.checkDistinct(libraries)
        return try reading { session in
            let transactions = try libraries.map { library in
                let row = try Self.liveRow(library, session)
                return PostgresTransaction(engine: LibraryTransaction(
                    session, library: row.id, context: engine, soleWriter: false, known: row))
            }
            return try body(transactions)
        }
    }

    /// A write of one library joins that library's write group (``writeGroups``): one
    /// transaction for the writes this instance has waiting, each under its own savepoint. A
    /// write of several libraries runs in a transaction of its own.
    public func write<T>(_ libraries: [LibraryID], _ body: ([any AlbumStoreWriter]) throws -> T) throws -> T {
        Self.checkDistinct(libraries)
        guard libraries.count == 1, let library = libraries.first else { return try writeAlone(libraries, body) }
        var value: T?
        // Claimed in the job's own savepoint of whichever transaction carries it.
        let claim = IdempotencyKeyClaim.pending
        let error = withoutActuallyEscaping(body) { body in
            let job = PostgresWriteJob { [engine] session, row in
                if let claim { try ServerRecordsSQL.claim(claim, session) }
                let transaction = PostgresTransaction(engine: LibraryTransaction(
                    session, library: row.id, context: engine, soleWriter: true, known: row))
                value = try body([transaction])
                try Self.finish([transaction], of: [library], session)
                return try transaction.engine.rowAfter()
            }
            let error = writeGroups.perform(job, library: library.rawValue) { batch in runBatch(batch, of: library) }
            // Done: the body goes with this call.
            job.run = nil
            return error
        }
        if let error { throw error }
        claim?.markCommitted()
        // The batch's transaction noted its position before the job heard of its commit.
        if replicas != nil { ReadPosition.current?.note(latestCommit.load(ordering: .relaxed)) }
        // A committed job ran its body to the end, which set the value.
        guard let value else { throw StorageError(.corrupt, "a committed write left no result") }
        return value
    }

    /// A write that changes a great many rows (an archive import) runs in a transaction of its
    /// own, never in a write group's batch (where it would hold the writes queued behind it).
    public func writeAlone<T>(_ library: LibraryID, _ body: (any AlbumStoreWriter) throws -> T) throws -> T {
        try writeAlone([library]) { try body($0[0]) }
    }

    /// `body` in a transaction of its own, under the locks of `libraries` (in row-id order).
    private func writeAlone<T>(_ libraries: [LibraryID], _ body: ([any AlbumStoreWriter]) throws -> T) throws -> T {
        try writing { session in
            let rows = try Self.lock(libraries, session)
            let transactions = rows.map { row in
                PostgresTransaction(engine: LibraryTransaction(
                    session, library: row.id, context: engine, soleWriter: libraries.count == 1, known: row))
            }
            let result = try body(transactions)
            try Self.finish(transactions, of: libraries, session)
            return result
        }
    }

    /// After a write body: writes back what its engines cached, sends the album rows they
    /// queued and queues the commit's notification for each library whose version moved
    /// (PostgreSQL delivers one per library and transaction, however often it is sent).
    private static func finish(_ transactions: [PostgresTransaction], of libraries: [LibraryID], _ session: PostgresSession) throws {
        for transaction in transactions { try transaction.engine.finish() }
        try session.sendQueuedAlbums()
        for (library, transaction) in zip(libraries, transactions) where transaction.engine.bumpedVersion {
            try session.runLater(PostgresSQL.notifyCommit, [.text(library.rawValue)])
        }
    }

    /// Transactions this instance's write groups committed and the writes they carried.
    public var writeGroupStatistics: PostgresWriteGroupStatistics { writeGroups.statistics }

    /// Writes waiting behind a running transaction of their library right now (tests observe a
    /// batch forming).
    public var queuedWriteCount: Int { writeGroups.waitingCount }

    /// Runs `batch` (writes of `library`) in one transaction under the library's row lock, each
    /// job under its own savepoint when there are several, and returns every job's outcome in
    /// order (nil: committed).
    ///
    /// A job that fails is rolled back alone. When the transaction fails as a whole (its commit,
    /// a lost connection, a savepoint that could not be rolled back to), every job fails with
    /// that error but the ones that failed on their own before any job succeeded: a later job's
    /// 412 or 409 may have been decided against writes that never committed.
    private func runBatch(_ batch: [PostgresWriteJob], of library: LibraryID) -> [(any Error)?] {
        var outcomes: [(any Error)?] = Array(repeating: nil, count: batch.count)
        var ownFailures: Set<Int> = []
        do {
            // Each job claims its own request's key; the leader's is its job's, not the batch's.
            try writing(claiming: false) { session in
                // Again from the start when the batch is retried (a deadlock victim).
                outcomes = Array(repeating: nil, count: batch.count)
                ownFailures = []
                var row = try Self.lock([library], session)[0]
                var succeeded = false
                for (index, job) in batch.enumerated() {
                    guard batch.count > 1 else {
                        row = try job.body(session, row)
                        continue
                    }
                    do {
                        row = try session.connection.transaction(.readCommitted) { try job.body(session, row) }
                        succeeded = true
                    } catch {
                        // Its savepoint is rolled back; what it queued in the session goes too.
                        session.discardQueued()
                        // A deadlock or serialization failure: the whole batch is run once more,
                        // as a write alone would be (`writing`).
                        if Self.isWorthRetrying(error) { throw error }
                        outcomes[index] = Self.refusedAsData(error) ?? error
                        if !succeeded { ownFailures.insert(index) }
                        if session.connection.isBroken || session.connection.isInFailedTransaction { throw error }
                    }
                }
            }
        } catch {
            for index in batch.indices where !ownFailures.contains(index) { outcomes[index] = error }
        }
        return outcomes
    }

    /// The current versions in one statement (its own snapshot), shared with every other call
    /// that comes while an earlier one runs (``versionReads``): a request that starts after
    /// any instance acknowledged a write still gets a read that started after it, so it sees
    /// that write; a busy instance makes one read for all the requests that came meanwhile,
    /// not one each.
    ///
    /// The shared read obeys no request's budget (it answers others too: one small statement,
    /// bounded by the pool's and the connection's own timeouts); a call whose budget runs out
    /// or whose client leaves while it waits for another caller's read stops waiting.
    public func versions(of libraries: [LibraryID]) throws -> [Int64] {
        Self.checkDistinct(libraries)
        guard !libraries.isEmpty else { return [] }
        let budget = QueryBudget.current
        // The time limit counts from here, as it would from the first statement of the request.
        budget?.begin()
        if let budget, let reason = budget.interruption() { throw budget.stopped(reason) }
        let names = libraries.map(\.rawValue)
        let abandon = { budget.flatMap { budget in budget.interruption().map { budget.stopped($0) } } }
        let found: [String: VersionAt]
        if let replicas, let position = ReadPosition.current, position.triesReplicas {
            // A fit replica's shared read when it is as new as this client's position; else a
            // read of this request's own (it waits for a replica to get there, or reads the
            // primary).
            if let index = replicas.nextFit(),
               case let shared = try replicaVersionReads[index].values(of: names, pollInterval: .milliseconds(20), abandon: abandon, read: { names in
                   QueryBudget.$current.withValue(nil) {
                       replicas.shared(index) { connection in
                           // Looked at before the statement: what it shows includes this position.
                           let replayed = try PostgresReplicas.position(connection)
                           return try Self.readVersions(Array(names), connection).mapValues { read in
                               VersionAt(version: read.version, position: read.position, replayed: replayed)
                           }
                       } ?? [:]
                   }
               }),
               names.allSatisfy({ shared[$0].map { $0.replayed >= position.position } ?? false })
            {
                found = shared
            } else {
                found = try statement(recordingPosition: false) { try Self.readVersions(names, $0.connection) }
            }
        } else {
            found = try versionReads.values(of: names, pollInterval: .milliseconds(20), abandon: abandon) { names in
                try QueryBudget.$current.withValue(nil) {
                    try ReadPosition.$current.withValue(nil) {
                        try statement(recordingPosition: false) { try Self.readVersions(Array(names), $0.connection, positioned: replicas != nil) }
                    }
                }
            }
        }
        return try libraries.map { library in
            guard let read = found[library.rawValue] else { throw LibraryError.libraryNotFound(library) }
            ReadPosition.current?.note(read.position)
            return read.version
        }
    }

    /// Reads taken by ``versions(of:)`` and the calls they answered, since the start.
    public var versionReadStatistics: (reads: Int, calls: Int) { versionReads.statistics }

    /// A library's version and the position of the read that found it, read after it (0
    /// without replicas); for a replica's shared read, also the position the replica had
    /// replayed before it (what the read surely shows).
    struct VersionAt: Sendable {
        let version: Int64
        let position: UInt64
        var replayed: UInt64 = 0
    }

    /// The versions of the live libraries among `names`, in one statement on `connection` (one
    /// text for any number of names: ids are letters, digits and `-`, so a comma separates
    /// them), with the position the read saw (read after it) unless `positioned` is false. The
    /// caller notes the position (a batch's callers each note it).
    private static func readVersions(_ names: [String], _ connection: PostgresConnection, positioned: Bool = true) throws
        -> [String: VersionAt]
    {
        var found: [String: Int64] = [:]
        try PostgresSession(connection).forEachRow(PostgresSQL.versions, [.text(names.joined(separator: ","))]) { row in
            if try row.bool(2) { found[try row.string(0)] = try row.int64(1) }
        }
        let position = positioned ? try PostgresReplicas.position(connection) : 0
        return found.mapValues { VersionAt(version: $0, position: position) }
    }

    /// Runs `body`, one statement (its own snapshot, no BEGIN/COMMIT round trips), on a pooled
    /// connection: the catalog and the view definitions, which a shared store's facade reads often.
    /// Obeys the calling thread's ``QueryBudget`` like `reading`.
    func statement<T>(recordingPosition: Bool = true, _ body: (PostgresSession) throws -> T) throws -> T {
        try Self.refusingInvalidData {
            try Self.obeyingBudget { budget in
                try withReadConnection { connection in
                    try Self.stopping(connection, budget) {
                        let value = try body(PostgresSession(connection))
                        // After the statement: a position it cannot be newer than.
                        if replicas != nil, recordingPosition { try PostgresReplicas.record(connection) }
                        return value
                    }
                }
            }
        }
    }

    /// Runs `body` in one REPEATABLE READ READ ONLY transaction on a pooled connection.
    ///
    /// When the calling thread has a ``QueryBudget`` (a read request's), the read obeys it: it
    /// does not start for a cancelled request; its transaction's `statement_timeout` is what is
    /// left of the time limit (`SET LOCAL`, with the `BEGIN`); and a statement running when the
    /// limit passes or the request is cancelled is cancelled on the server (`PQcancel`, looked
    /// at every 2 ms while it runs). It then throws ``QueryInterrupted``.
    func reading<T>(_ body: (PostgresSession) throws -> T) throws -> T {
        try Self.refusingInvalidData {
            try Self.obeyingBudget { budget in
                try withReadConnection { connection in
                    let timeout = budget?.begin()
                    return try connection.transaction(.repeatableReadReadOnly, statementTimeout: timeout) {
                        try Self.stopping(connection, budget) {
                            // The first statement takes the snapshot; the position is read after it.
                            if replicas != nil { try PostgresReplicas.record(connection) }
                            return try body(PostgresSession(connection))
                        }
                    }
                }
            }
        }
    }

    /// Runs `body` with the thread's budget (nil: none), turning a stop into `QueryInterrupted`.
    static func obeyingBudget<T>(_ body: (QueryBudget?) throws -> T) throws -> T {
        let budget = QueryBudget.current
        guard let budget else { return try body(nil) }
        if let reason = budget.interruption() { throw budget.stopped(reason) }
        do {
            return try body(budget)
        } catch let error as PostgresError where error.kind == .timeout && error.sqlState == "57014" {
            // Stopped by the check, or by the transaction's statement_timeout (the time limit).
            if let reason = budget.interruption() { throw budget.stopped(reason) }
            guard let limit = budget.timeLimit else { throw error }  // the session's own timeout
            throw budget.stopped(.timeLimit(limit))
        }
    }

    /// `body` with `budget`'s stop check on `connection` (none without a budget).
    static func stopping<T>(_ connection: PostgresConnection, _ budget: QueryBudget?, _ body: () throws -> T) throws -> T {
        guard let budget else { return try body() }
        budget.begin()
        return try connection.stopping(when: { budget.interruption() != nil }, body)
    }

    /// Runs `body` in one READ COMMITTED transaction on a pooled connection; it commits only if
    /// `body` returns, and a throw comes back unchanged after the rollback.
    ///
    /// A transaction PostgreSQL aborted as a deadlock victim or for a serialization failure is
    /// run once more, `body` included (bodies work only through the session: the facade's
    /// publish their events after the commit, so a rolled-back attempt left nothing behind).
    /// When the second attempt fails too, its error is thrown: it `isUnavailable` (503).
    ///
    /// A request's `Idempotency-Key` not claimed yet (``IdempotencyKeyClaim/pending``) is
    /// claimed first in the same transaction (unless `claiming` is false: a write group's
    /// batch, whose jobs claim their own): it commits with the write.
    func writing<T>(claiming: Bool = true, _ body: (PostgresSession) throws -> T) throws -> T {
        let claim = claiming ? IdempotencyKeyClaim.pending : nil
        let value = try Self.refusingInvalidData {
            try Self.retryingOnce {
                try pool.withConnection { connection in
                    let value = try connection.transaction(.readCommitted) {
                        let session = PostgresSession(connection)
                        if let claim { try ServerRecordsSQL.claim(claim, session) }
                        return try body(session)
                    }
                    if replicas != nil { noteCommitted(connection) }
                    return value
                }
            }
        }
        claim?.markCommitted()
        return value
    }

    /// A connection of a replica fit for this request's reads, else of the primary (see
    /// ``PostgresReplicas``).
    private func withReadConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        guard let replicas else { return try pool.withConnection(body) }
        return try replicas.withReadConnection(body)
    }

    /// After a commit on `connection`: the primary's position now (past the commit) becomes
    /// the request's and the newest any commit here reached. The commit stands whatever
    /// happens here: when no position can be read, the request hands none back.
    private func noteCommitted(_ connection: PostgresConnection) {
        // Any later position of the primary covers the commit: another connection will do.
        guard let position = (try? PostgresReplicas.position(connection)) ?? (try? pool.withConnection({ try PostgresReplicas.position($0) }))
        else {
            ReadPosition.current?.noteUnknown()
            return
        }
        _ = latestCommit.max(position, ordering: .relaxed)
        ReadPosition.current?.note(position)
    }

    /// Runs `attempt`, and once more when it failed with an error ``isWorthRetrying(_:)``.
    static func retryingOnce<T>(_ attempt: () throws -> T) throws -> T {
        do {
            return try attempt()
        } catch let error where isWorthRetrying(error) {
            return try attempt()
        }
    }

    /// True for the errors of a transaction the server aborted only because of concurrent
    /// ones (deadlock, serialization failure): the same transaction run again may well commit.
    static func isWorthRetrying(_ error: any Error) -> Bool {
        guard let error = error as? PostgresError else { return false }
        return error.kind == .deadlock || error.kind == .serialization
    }

    /// Runs `body`, turning a value the server refuses as data (`PostgresError.Kind.invalidData`,
    /// SQLSTATE class 22: text with a NUL character…) into `LibraryError.malformed`, a client
    /// error (400), not a storage failure (500). SQLite stores such values; input validation
    /// should refuse them before they get here.
    static func refusingInvalidData<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            throw refusedAsData(error) ?? error
        }
    }

    /// `LibraryError.malformed` for a value the server refused as data, else nil.
    static func refusedAsData(_ error: any Error) -> LibraryError? {
        guard let error = error as? PostgresError, error.kind == .invalidData else { return nil }
        return LibraryError.malformed("the database cannot store a value of this request: \(error.message)")
    }

    private static func checkDistinct(_ libraries: [LibraryID]) {
        precondition(libraries.count < 2 || Set(libraries).count == libraries.count, "libraries must not repeat")
    }

    /// The row of a live `library` in the transaction's snapshot (with its count and version).
    /// - Throws: `LibraryError.libraryNotFound` when there is no live library `library`.
    static func liveRow(_ library: LibraryID, _ session: PostgresSession) throws -> KnownLibraryRow {
        guard let row = try session.firstRow(PostgresSQL.libraryRow, [.text(library.rawValue)], Self.liveLibraryRow)
            ?? nil
        else {
            throw LibraryError.libraryNotFound(library)
        }
        return row
    }

    /// Locks the rows of `libraries` (in row-id order) and returns them (with count and version,
    /// read under the lock) in the order given. Library rows are never deleted (a deleted library
    /// is a tombstone), so a row id found before its lock is still that name's; whether it is
    /// live is read under the lock.
    /// - Throws: `LibraryError.libraryNotFound` for a library that is not live.
    static func lock(_ libraries: [LibraryID], _ session: PostgresSession) throws -> [KnownLibraryRow] {
        if libraries.count == 1 {
            let library = libraries[0]
            guard let row = try session.firstRow(PostgresSQL.lockLibraryByName, [.text(library.rawValue)], Self.liveLibraryRow)
                ?? nil
            else {
                throw LibraryError.libraryNotFound(library)
            }
            return [row]
        }
        let ids = try libraries.map { library in
            guard let id = try session.value(SQL.libraryID, [.text(library.rawValue)], as: Int64.self) else {
                throw LibraryError.libraryNotFound(library)
            }
            return id
        }
        var locked: [Int64: KnownLibraryRow] = [:]
        for (id, library) in zip(ids, libraries).sorted(by: { $0.0 < $1.0 }) {
            guard let row = try session.firstRow(PostgresSQL.lockLibrary, [.integer(id)], Self.liveLibraryRow) ?? nil else {
                throw LibraryError.libraryNotFound(library)
            }
            locked[id] = row
        }
        return ids.map { locked[$0]! }
    }

    /// Columns id, live, album_count, version, sort_articles: the row when live, else nil.
    private static func liveLibraryRow(_ row: PostgresRow) throws -> KnownLibraryRow? {
        guard try row.bool(1) else { return nil }
        return KnownLibraryRow(
            id: try row.int64(0), albumCount: try row.int(2), version: try row.int64(3),
            sortArticles: SortArticles(stored: try row.string(4)))
    }

    // MARK: - Consistency

    /// Checks the ordering bookkeeping of `library` against the album rows, in one snapshot
    /// (see `AlbumOrderingReport.check`). Scans the whole library: for tests and maintenance.
    /// - Throws: `StorageError.corrupt` describing the first broken invariant.
    public func checkConsistency(_ library: LibraryID) throws -> AlbumOrderingReport {
        try reading { session in try AlbumOrderingReport.check(library, session) }
    }
}

extension PostgresAlbumStore {
    /// PostgreSQL's plan (`EXPLAIN`, its lines joined by "; ") for each statement a page of
    /// this query runs; see `AlbumPages.pageStatements`. For tests and maintenance: a keyset
    /// page of a large library should read an `Index Scan using albums_by_…` with no `Sort`.
    public func pagePlans(
        _ library: LibraryID, matching filter: AlbumFilter, sort: AlbumSort, from anchor: SortAnchor, limit: Int
    ) throws -> [String] {
        try reading { session in
            let row = try Self.liveRow(library, session).id
            let pages = AlbumPages(db: session, library: row, order: SparseOrder(session, library: row, context: engine))
            return try pages.pageStatements(matching: filter, sort: sort, from: anchor, limit: limit).map { sql, bindings in
                try session.query("EXPLAIN " + sql, bindings) { try $0.string(0) }.joined(separator: "; ")
            }
        }
    }

    /// PostgreSQL's plans for a stretch of a value order: its count, then its page after
    /// `skipping` (see `AlbumPages.rangeStatements`).
    public func rangePlans(
        _ library: LibraryID, matching filter: AlbumFilter, sort: AlbumSort, in range: SortRange, skipping: Int, limit: Int
    ) throws -> [String] {
        try reading { session in
            let row = try Self.liveRow(library, session).id
            let pages = AlbumPages(db: session, library: row, order: SparseOrder(session, library: row, context: engine))
            return try pages.rangeStatements(matching: filter, sort: sort, in: range, skipping: skipping, limit: limit).map { sql, bindings in
                try session.query("EXPLAIN " + sql, bindings) { try $0.string(0) }.joined(separator: "; ")
            }
        }
    }
}
