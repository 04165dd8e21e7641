import CSQLite

/// One SQLite connection. Owns its `sqlite3*` and closes it in `deinit`.
///
/// Opened with `SQLITE_OPEN_NOMUTEX`: SQLite does no locking of its own, so a connection
/// (and its statements) must be used by one thread at a time. It is deliberately not
/// `Sendable`; share a database between threads through ``Database``.
///
/// Setup at open: extended result codes, `busy_timeout`, `journal_mode=WAL` (verified),
/// `synchronous`, `foreign_keys=ON` (verified).
public final class Connection {
    /// Replaced only by ``renew()``, between transactions.
    private(set) var handle: OpaquePointer
    public let path: String
    public let mode: Mode
    private let options: Options
    /// Statements ``runForLife(_:)`` ran, run again on a renewed handle.
    private var lifeSettings: [String] = []
    var cache: StatementCache
    var savepointDepth = 0
    /// Kept alive here while SQLite's WAL hook points at it (see `installWALHook`).
    var walFrameCounter: WALFrameCounter?
    /// Number of statements this connection has prepared (cache misses included);
    /// useful to verify statement reuse.
    public internal(set) var preparedStatementCount = 0

    public init(path: String, mode: Mode = .readWriteCreate, options: Options = Options()) throws {
        _ = Self.processSetup
        var flags = SQLITE_OPEN_NOMUTEX
        switch mode {
        case .readWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        case .readWrite: flags |= SQLITE_OPEN_READWRITE
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        }
        self.handle = try Self.open(path, flags: flags, mode: mode, options: options)
        self.path = path
        self.mode = mode
        self.options = options
        self.cache = StatementCache(capacity: options.statementCacheCapacity)
    }

    private static func open(_ path: String, flags: Int32, mode: Mode, options: Options) throws -> OpaquePointer {
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard let db else {
            // SQLite only fails to allocate a handle when out of memory.
            throw SQLiteError(extendedCode: rc == SQLITE_OK ? SQLITE_NOMEM : rc, message: "cannot allocate a connection", sql: nil)
        }
        do {
            guard rc == SQLITE_OK else {
                throw SQLiteError(resultCode: sqlite3_extended_errcode(db), db: db, sql: nil)
            }
            try Connection.configure(db, mode: mode, options: options)
        } catch {
            // A handle is returned even when open fails; it must be closed.
            sqlite3_close_v2(db)
            throw error
        }
        return db
    }

    /// Runs `sql` (a setting such as `PRAGMA cache_size`) now and again whenever ``renew()``
    /// replaces the handle, so the setting holds for the connection's whole life.
    public func runForLife(_ sql: String) throws {
        try run(sql)
        lifeSettings.append(sql)
    }

    /// Replaces the SQLite handle with a freshly opened one, set up as this one was (the open
    /// options, ``runForLife(_:)``'s settings, the WAL hook), outside a transaction. Why: some
    /// memory a handle grows for one large transaction stays with it and costs every later
    /// write (FTS5's table of pending index entries is never shrunk, and each savepoint walks
    /// and clears all of it: after a rebuild of the search index at 200,000 albums, every single
    /// add took 5 ms instead of 0.3). When opening fails, the old handle stays.
    public func renew() throws {
        guard !isInTransaction else {
            throw SQLiteError(extendedCode: SQLITE_MISUSE, message: "a connection is renewed between transactions, not inside one", sql: nil)
        }
        // A database only this handle holds (in memory, temporary) would go with it.
        guard !path.isEmpty, path != ":memory:", !path.hasPrefix("file::memory:") else { return }
        let flags: Int32 = switch mode {
        case .readWriteCreate: SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        case .readWrite: SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_READWRITE
        case .readOnly: SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_READONLY
        }
        let fresh = try Self.open(path, flags: flags, mode: mode, options: options)
        cache.removeAll()
        let old = handle
        handle = fresh
        do {
            for sql in lifeSettings { try run(sql) }
        } catch {
            // The old handle goes on, as it was.
            cache.removeAll()
            handle = old
            sqlite3_close_v2(fresh)
            throw error
        }
        if let walFrameCounter { installWALHook(walFrameCounter) }
        sqlite3_close_v2(old)
    }

    deinit {
        cache.removeAll()
        // close_v2 never fails for a valid handle: if a `Statement` is still referenced
        // somewhere, the handle becomes a zombie and is freed with that statement.
        sqlite3_close_v2(handle)
    }

    /// Set once, before the process's first connection: SQLite counts no memory statistics
    /// (nothing reads them; counting takes a global mutex around every allocation: a 1M import
    /// took 0.5 to 0.7 s less CPU without it).
    private static let processSetup: Void = { _ = bl_sqlite3_disable_memory_statistics() }()

    private static func configure(_ db: OpaquePointer, mode: Mode, options: Options) throws {
        var rc = sqlite3_extended_result_codes(db, 1)
        guard rc == SQLITE_OK else { throw SQLiteError(resultCode: rc, db: db, sql: nil) }
        rc = sqlite3_busy_timeout(db, options.busyTimeout.clampedMilliseconds)
        guard rc == SQLITE_OK else { throw SQLiteError(resultCode: rc, db: db, sql: nil) }

        // A read-only connection cannot switch modes; the writer must have enabled WAL.
        let journalSQL = mode == .readOnly ? "PRAGMA journal_mode" : "PRAGMA journal_mode=WAL"
        let journalMode = try singleText(db, journalSQL)
        guard journalMode?.lowercased() == "wal" else {
            throw SQLiteError(
                extendedCode: SQLITE_ERROR,
                message: "could not enable WAL journal mode (got \(journalMode ?? "nothing"))",
                sql: journalSQL
            )
        }
        try singleText(db, "PRAGMA synchronous=\(options.synchronous.rawValue)")
        try singleText(db, "PRAGMA foreign_keys=ON")
        guard try singleText(db, "PRAGMA foreign_keys") == "1" else {
            throw SQLiteError(extendedCode: SQLITE_ERROR, message: "could not enable foreign keys", sql: "PRAGMA foreign_keys=ON")
        }
    }

    /// Runs one statement on a raw handle and returns the first column of its first row.
    @discardableResult
    private static func singleText(_ db: OpaquePointer, _ sql: String) throws -> String? {
        let statement = try Statement(db: db, sql: sql, persistent: false)
        guard try statement.step() else { return nil }
        let row = statement.row
        return row.isNull(0) ? nil : row.rawString(0)
    }

    // MARK: - State

    /// Rowid of the most recent successful INSERT on this connection.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    /// Rows changed by the most recent INSERT/UPDATE/DELETE.
    public var changes: Int { Int(sqlite3_changes64(handle)) }
    /// Rows changed since the connection was opened.
    public var totalChanges: Int { Int(sqlite3_total_changes64(handle)) }
    /// True between BEGIN and COMMIT/ROLLBACK.
    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }
    public var isReadOnly: Bool { sqlite3_db_readonly(handle, "main") == 1 }
    /// Number of statements currently held in the statement cache.
    public var cachedStatementCount: Int { cache.count }

    /// Drops all cached prepared statements.
    public func clearStatementCache() {
        cache.removeAll()
    }

    // MARK: - Scripts

    /// Runs a script of one or more `;`-separated statements without parameters
    /// (schema creation, pragmas). Clears the statement cache, since scripts usually change the schema.
    public func execute(_ sql: String) throws {
        cache.removeAll()
        var errorMessage: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        let message = errorMessage.map { String(cString: $0) }
        sqlite3_free(errorMessage)
        guard rc == SQLITE_OK else {
            throw SQLiteError(extendedCode: rc, message: message ?? String(cString: sqlite3_errstr(rc)), sql: sql)
        }
    }
}

@available(*, unavailable)
extension Connection: Sendable {}
