#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Storage

/// `bluelibrary backup` and `bluelibrary restore` on a SQLite data directory: the whole
/// database file (see `SQLiteBackup`), taken from a running server without stopping it, and
/// put back only while no server runs on the directory. On PostgreSQL the database's own
/// tools are the answer (`pg_dump` / `pg_restore`), so both refuse a database URL.
public enum DataBackup {
    /// The database file's name in a data directory.
    public static let databaseFileName = "bluelibrary.sqlite"

    /// The database file in `dataDirectory`.
    public static func databasePath(in dataDirectory: String) -> String {
        URL(fileURLWithPath: dataDirectory).appendingPathComponent(databaseFileName).path
    }

    /// Copies the database in `dataDirectory` to the new file `target`; returns a report.
    /// - Throws: ``ConfigurationError`` saying what is wrong and what to do.
    /// `target` `-` writes the copy to standard output instead (`docker exec NAME bluelibrary
    /// backup --to - > FILE`): it is made and checked beside the database first, and nothing is
    /// left there afterwards.
    public static func backup(dataDirectory: String, to target: String) throws(ConfigurationError) -> String {
        let source = databasePath(in: dataDirectory)
        do {
            if target == "-" {
                guard isatty(STDOUT_FILENO) != 1 else {
                    throw ConfigurationError("--to - writes the backup to standard output, which is a terminal here; "
                        + "redirect it to a file: bluelibrary backup --to - > FILE")
                }
                let scratch = source + ".backup-\(getpid())"
                let summary = try SQLiteBackup.backup(databaseAt: source, writingTo: STDOUT_FILENO, scratch: scratch)
                return "backed up \(source) to standard output\n\(summary)"
            }
            let summary = try SQLiteBackup.backup(databaseAt: source, to: target)
            return "backed up \(source) to \(target)\n\(summary)"
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError("backup failed: \(error)")
        }
    }

    /// Puts the backup `backup` in place of the database in `dataDirectory` (created if
    /// missing), refusing while a server runs on it; returns a report. `backup` `-` reads it
    /// from standard input (`docker run -i ... restore --from - < FILE`: no file the image's
    /// user must be able to read).
    /// - Throws: ``ConfigurationError`` saying what is wrong and what to do.
    public static func restore(from backup: String, dataDirectory: String) throws(ConfigurationError) -> String {
        let database = databasePath(in: dataDirectory)
        do {
            try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
            let lock = try DataDirectoryLock(directory: dataDirectory, mode: .exclusive)
            let restored = try withExtendedLifetime(lock) { () throws -> SQLiteBackup.Restored in
                if backup == "-" { return try SQLiteBackup.restore(readingFrom: STDIN_FILENO, named: "standard input", to: database) }
                return try SQLiteBackup.restore(from: backup, to: database)
            }
            var report = "restored \(backup == "-" ? "standard input" : backup) to \(database)\n\(restored.summary)"
            if let kept = restored.kept {
                if let damage = restored.damage {
                    report += "\nthe database it replaced could not be opened (\(damage)); it is kept as it was, "
                        + "with any -wal and -shm files beside it, as \(kept)"
                } else {
                    report += "\nthe database it replaced is kept as \(kept)"
                }
            }
            return report
        } catch {
            throw ConfigurationError("restore failed: \(error)")
        }
    }

    /// What `backup` and `restore` say when given a PostgreSQL database.
    public static let postgresAdvice = """
        backup and restore copy the SQLite file of a data directory; a PostgreSQL database is backed \
        up with PostgreSQL's own tools: pg_dump --format=custom --file=FILE URL, and put back with \
        pg_restore --clean --if-exists --dbname=URL FILE while every instance is stopped
        """
}
