import CSQLite
import Glibc

extension Connection {
    /// Copies this connection's `main` database into a new file at `path` with SQLite's online
    /// backup API (`sqlite3_backup_*`), and returns the number of pages copied.
    ///
    /// All pages are copied in one step, inside one read transaction of this connection: the
    /// copy is the database as of one commit, however many other connections or processes keep
    /// writing meanwhile (in WAL mode they are not held up; a checkpoint that needs this reader
    /// gone waits or gives up). The file at `path` is created, or overwritten when it exists;
    /// it is synced to disk before this returns. A busy source (another connection holding an
    /// exclusive lock, which WAL writers do not) is retried for up to `busyWait`.
    @discardableResult
    public func backup(toFile path: String, busyWait: Duration = .seconds(5)) throws -> Int {
        var target: OpaquePointer?
        let rc = sqlite3_open_v2(path, &target, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        guard let target else {
            throw SQLiteError(extendedCode: rc == SQLITE_OK ? SQLITE_NOMEM : rc, message: "cannot allocate a connection", sql: nil)
        }
        // close_v2 after finish never fails for a valid handle.
        defer { sqlite3_close_v2(target) }
        guard rc == SQLITE_OK else { throw SQLiteError(resultCode: sqlite3_extended_errcode(target), db: target, sql: nil) }
        // The copy is synced in full before it is reported done.
        try? Connection.runRaw(target, "PRAGMA synchronous=FULL")

        guard let backup = sqlite3_backup_init(target, "main", handle, "main") else {
            throw SQLiteError(resultCode: sqlite3_extended_errcode(target), db: target, sql: nil)
        }
        let clock = ContinuousClock()
        let deadline = clock.now + busyWait
        var step: Int32
        repeat {
            step = sqlite3_backup_step(backup, -1)
            if step == SQLITE_BUSY || step == SQLITE_LOCKED {
                guard clock.now < deadline else { break }
                // The source's lock is held by another process; SQLite's own short wait.
                sqlite3_sleep(10)
            }
        } while step == SQLITE_BUSY || step == SQLITE_LOCKED
        let pages = Int(sqlite3_backup_pagecount(backup))
        let finished = sqlite3_backup_finish(backup)
        guard step == SQLITE_DONE else {
            throw SQLiteError(extendedCode: step, message: "backup to \(path) stopped: \(String(cString: sqlite3_errstr(step)))", sql: nil)
        }
        guard finished == SQLITE_OK else { throw SQLiteError(resultCode: finished, db: target, sql: nil) }
        return pages
    }

    /// Runs one statement without a result on a raw handle.
    private static func runRaw(_ db: OpaquePointer, _ sql: String) throws {
        let rc = sqlite3_exec(db, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw SQLiteError(resultCode: rc, db: db, sql: sql) }
    }

    /// `PRAGMA quick_check`: nil when the database file is sound, else SQLite's first complaint.
    public func quickCheckProblem() throws -> String? {
        let result = try scalar("PRAGMA quick_check(1)", as: String.self)
        return result == "ok" ? nil : (result ?? "no answer")
    }
}
