import Foundation
import SQLite
#if canImport(Glibc)
import Glibc
#endif

/// Whole-database copies of the SQLite store with SQLite's online backup API: everything the
/// file holds (libraries and their albums in order, undo stacks, saved states, the change feed,
/// views, settings, the token hash and lockouts, idempotency keys, the cursor key), unlike an
/// archive, which carries one library's albums and states.
public enum SQLiteBackup {
    /// What a copy holds: each table's row count (sorted by table name) and its size.
    public struct Summary: Sendable, Equatable, CustomStringConvertible {
        public var rowCounts: [(table: String, rows: Int)]
        /// Schema migrations recorded in the copy (the version of the program that wrote it).
        public var migrations: Int
        public var bytes: Int

        public static func == (a: Summary, b: Summary) -> Bool {
            a.rowCounts.map(\.table) == b.rowCounts.map(\.table) && a.rowCounts.map(\.rows) == b.rowCounts.map(\.rows)
                && a.migrations == b.migrations && a.bytes == b.bytes
        }

        public func rows(in table: String) -> Int? { rowCounts.first { $0.table == table }?.rows }

        public var description: String {
            var lines = ["schema migrations: \(migrations), \(bytes) bytes"]
            lines += rowCounts.map { "  \($0.table): \($0.rows) rows" }
            return lines.joined(separator: "\n")
        }
    }

    /// What a restore did: what the restored copy holds, and what became of the database it replaced.
    public struct Restored: Sendable {
        public var summary: Summary
        /// Where the database it replaced is kept (nil: there was none).
        public var kept: String?
        /// Why the replaced database could not be opened or checkpointed (nil: it was sound). It
        /// is kept as it was, with its `-wal` and `-shm` files renamed beside it.
        public var damage: String?
    }

    /// A copy or restore that cannot be made; `message` says why and what to do.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// Copies the database at `source` (it may be in use by a running server: the copy is the
    /// database as of one commit) to a new file `target`, checks the copy and returns what it
    /// holds. The copy is written next to `target` as `<target>.partial` and renamed into
    /// place once it is complete and checked, so `target` is never a half-written file.
    public static func backup(databaseAt source: String, to target: String) throws -> Summary {
        guard FileManager.default.fileExists(atPath: source) else {
            throw Failure("there is no database at \(source); check --data-dir")
        }
        guard !FileManager.default.fileExists(atPath: target) else {
            throw Failure("\(target) exists already; choose a new file name (a backup never overwrites one)")
        }
        let partial = target + ".partial"
        removeDatabaseFiles(partial)
        do {
            // Readable by its owner only, whatever the umask: a copy holds the token's hash and
            // the cursor key. SQLite writes into the file as it finds it.
            let fd = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw Failure("cannot create \(partial): \(String(cString: strerror(errno)))") }
            close(fd)
            let connection = try Connection(path: source, mode: .readWrite)
            try connection.backup(toFile: partial)
        } catch {
            removeDatabaseFiles(partial)
            throw Failure("cannot copy \(source) to \(partial): \(error)")
        }
        let summary: Summary
        do {
            summary = try inspect(partial)
        } catch {
            removeDatabaseFiles(partial)
            throw error
        }
        guard rename(partial, target) == 0 else {
            let reason = String(cString: strerror(errno))
            removeDatabaseFiles(partial)
            throw Failure("cannot rename \(partial) to \(target): \(reason)")
        }
        try syncDirectory(of: target)
        return summary
    }

    /// Copies the database at `source` as ``backup(databaseAt:to:)`` does, then writes the copy
    /// to the descriptor `output` (standard output: `bluelibrary backup --to -`, so the copy can
    /// leave a container through `docker exec` without a file in between). The copy is first
    /// made and checked as the new file `scratch` (beside the database: the data directory is
    /// the one place sure to be writable and large enough), which is unlinked as soon as it is
    /// open, so nothing is left behind once the copy is out, even when the process is killed.
    public static func backup(databaseAt source: String, writingTo output: Int32, scratch: String) throws -> Summary {
        let summary = try backup(databaseAt: source, to: scratch)
        let fd = open(scratch, O_RDONLY | O_CLOEXEC)
        let openError = errno
        unlink(scratch)
        guard fd >= 0 else { throw Failure("cannot open the copy \(scratch): \(String(cString: strerror(openError)))") }
        defer { close(fd) }
        try copy(from: fd, named: scratch, to: output, named: "standard output")
        return summary
    }

    /// Puts a backup read from the descriptor `input` (standard input: `bluelibrary restore
    /// --from -`) in place of the database at `database`, as ``restore(from:to:)`` does with a
    /// file. The bytes go straight into the staging copy beside the database, so a backup needs
    /// no file of its own the restoring user can read: `docker run -i ... restore --from - < FILE`
    /// works for a backup only its owner may read, on any mount. `name` is what messages call it.
    public static func restore(readingFrom input: Int32, named name: String, to database: String) throws -> Restored {
        try restore(named: name, to: database) { staging in
            let fd = open(staging, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw Failure("cannot create \(staging): \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            let copied = try copy(from: input, named: name, to: fd, named: staging)
            guard copied > 0 else { throw Failure("\(name) is empty: pass the backup file on standard input (--from - < FILE)") }
        }
    }

    /// Puts the backup `backup` (a file made by ``backup(databaseAt:to:)``) in place of the
    /// database at `database`. The caller makes sure no server has the database open
    /// (``DataDirectoryLock``). The backup is copied byte for byte to `<database>.restoring`
    /// (it is only read, so it may sit on a read-only mount) and the copy is checked (a sound
    /// SQLite file of this program's schema or an older one; a newer one is refused as
    /// `NewerSchemaError` says) and synced; then the current database (if any) has its WAL
    /// folded in and is kept as `<database>.before-restore` (replacing an older one), and the
    /// copy is renamed into place. A current database that cannot be opened or checkpointed
    /// (damaged, or not a SQLite file: the usual reason to restore) is kept as it is, its
    /// `-wal` and `-shm` renamed with it so that the kept copy stays whole, and the restore
    /// goes on. An older backup is upgraded by the next server start, as any older database is.
    public static func restore(from backup: String, to database: String) throws -> Restored {
        guard FileManager.default.fileExists(atPath: backup) else { throw Failure("there is no backup file at \(backup)") }
        guard access(backup, R_OK) == 0 else {
            let reason = String(cString: strerror(errno))
            throw Failure("cannot read the backup \(backup): \(reason); the user running restore (uid \(getuid())) must be able to read it. "
                + "A backup is its owner's only (mode 0600): pass it on standard input instead, "
                + "'bluelibrary restore --from - < FILE' (in a container: docker run -i ... restore --from - < FILE)")
        }
        // The backup file is only read, byte for byte (it may sit on a read-only mount); the
        // checks run on the copy, which is what goes into place.
        return try restore(named: backup, to: database) { staging in
            let input = open(backup, O_RDONLY | O_CLOEXEC)
            guard input >= 0 else { throw Failure("cannot read the backup \(backup): \(String(cString: strerror(errno)))") }
            defer { close(input) }
            let fd = open(staging, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw Failure("cannot create \(staging): \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            try copy(from: input, named: backup, to: fd, named: staging)
        }
    }

    /// The restore itself: `fill` writes the backup's bytes into the new file it is given (the
    /// staging copy beside `database`), which is checked, synced and put in place.
    private static func restore(named backup: String, to database: String, fill: (String) throws -> Void) throws -> Restored {
        let staging = database + ".restoring"
        removeDatabaseFiles(staging)
        let summary: Summary
        do {
            try fill(staging)
            summary = try inspect(staging, named: backup)
            try syncFile(staging)
        } catch {
            removeDatabaseFiles(staging)
            if let failure = error as? Failure { throw failure }
            throw Failure("cannot copy \(backup) to \(staging): \(error)")
        }
        var restored = Restored(summary: summary)
        if FileManager.default.fileExists(atPath: database) {
            var busy: String?
            do {
                // Closing the last connection after a truncating checkpoint leaves no WAL
                // that could be mistaken for the restored file's. The data directory lock keeps
                // servers out; anything else holding the file gets a second to let go.
                let current = try Connection(path: database, mode: .readWrite, options: .init(busyTimeout: .seconds(1)))
                // One row: busy (1 when a reader or writer stopped it), WAL frames, frames copied.
                let result = try current.query("PRAGMA wal_checkpoint(TRUNCATE)") { [try $0.int(0), try $0.int(1), try $0.int(2)] }
                if let row = result.first, row[0] != 0 || row[1] != row[2] {
                    busy = "the checkpoint could not complete: \(row[2]) of \(row[1]) WAL frames copied"
                }
            } catch let error as SQLiteError where error.isBusy || error.isLocked {
                busy = String(describing: error)
            } catch {
                // Damaged or not a database: nothing to fold in. It is kept as it is, with what
                // is left of its WAL, for whoever wants to look at it.
                restored.damage = String(describing: error)
            }
            if let busy {
                removeDatabaseFiles(staging)
                throw Failure("another process has the current database \(database) open, so its WAL cannot be folded in (\(busy)); "
                    + "stop it (bluelibrary migrate, a sqlite3 shell, a server started on another path to it) and restore again")
            }
            let kept = database + ".before-restore"
            removeDatabaseFiles(kept)
            // SQLite pairs a WAL with its database by name: they move together.
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: database + suffix) {
                guard rename(database + suffix, kept + suffix) == 0 else {
                    let reason = String(cString: strerror(errno))
                    removeDatabaseFiles(staging)
                    throw Failure("cannot move the current database file \(database + suffix) aside to \(kept + suffix): \(reason)")
                }
            }
            restored.kept = kept
        }
        // A WAL or shared-memory file left beside the old name would be read as the new file's.
        for suffix in ["-wal", "-shm"] { unlink(database + suffix) }
        guard rename(staging, database) == 0 else {
            let reason = String(cString: strerror(errno))
            throw Failure("cannot rename \(staging) to \(database): \(reason) (the previous database is \(database).before-restore)")
        }
        try syncDirectory(of: database)
        return restored
    }

    /// Opens the copy at `path`, checks that it is a sound database of this program's schema
    /// (or an older one) and counts its rows. Messages call it `name` (the file the user gave).
    public static func inspect(_ path: String, named name: String? = nil) throws -> Summary {
        let shown = name ?? path
        do {
            let connection = try Connection(path: path, mode: .readWrite)
            if let problem = try connection.quickCheckProblem() {
                throw Failure("\(shown) is damaged (SQLite's quick_check: \(problem))")
            }
            let applied = try Migrator.appliedIdentifiers(in: connection)
            guard !applied.isEmpty,
                  try connection.scalar("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'albums'", as: Int.self) != nil
            else { throw Failure("\(shown) is not a BlueLibrary database (it has no albums table or schema migrations)") }
            let known = Set(SQLiteAlbumStore.migrationIdentifiers)
            let unknown = applied.filter { !known.contains($0) }
            guard unknown.isEmpty else { throw NewerSchemaError(unknownMigrations: unknown) }
            let tables = try connection.query(
                "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            ) { try $0.string(0) }
            var counts: [(table: String, rows: Int)] = []
            for table in tables {
                let quoted = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                counts.append((table, try connection.scalar("SELECT count(*) FROM \(quoted)", as: Int.self) ?? 0))
            }
            let pages = try connection.scalar("PRAGMA page_count", as: Int.self) ?? 0
            let pageSize = try connection.scalar("PRAGMA page_size", as: Int.self) ?? 0
            return Summary(rowCounts: counts, migrations: applied.count, bytes: pages * pageSize)
        } catch let failure as Failure {
            throw failure
        } catch let newer as NewerSchemaError {
            throw Failure("\(shown): \(newer.description)")
        } catch {
            throw Failure("cannot read \(shown) as a database: \(error)")
        }
    }

    /// Copies everything `input` holds to `output` (names for messages); returns the bytes copied.
    @discardableResult
    static func copy(from input: Int32, named inputName: String, to output: Int32, named outputName: String) throws -> Int {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var total = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw Failure("cannot read \(inputName): \(String(cString: strerror(errno)))") }
            if count == 0 { return total }
            var written = 0
            while written < count {
                let step = buffer.withUnsafeBytes { write(output, $0.baseAddress! + written, count - written) }
                if step < 0 && errno == EINTR { continue }
                guard step > 0 else { throw Failure("cannot write to \(outputName): \(String(cString: strerror(errno)))") }
                written += step
            }
            total += count
        }
    }

    /// Flushes a file's data to disk (a copy is complete before it is renamed into place).
    static func syncFile(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure("cannot open \(path) to sync it: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw Failure("cannot sync \(path) to disk: \(String(cString: strerror(errno)))") }
    }

    /// Flushes the directory holding `path` to disk, so that a rename into it survives a power
    /// loss (the file's own data is synced separately).
    static func syncDirectory(of path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        let fd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure("cannot open the directory of \(path) to sync it: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw Failure("cannot sync the directory of \(path) to disk: \(String(cString: strerror(errno)))") }
    }

    /// Removes a database file and the WAL and shared-memory files beside it.
    static func removeDatabaseFiles(_ path: String) {
        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(path + suffix) }
    }
}
