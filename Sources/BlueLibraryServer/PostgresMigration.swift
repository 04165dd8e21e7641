import Foundation
import Storage

/// `bluelibrary migrate`'s work, for the command line (which sees only this module): copies the
/// SQLite database of a data directory into PostgreSQL (`DatabaseMigration`) and describes
/// what it copied.
public enum PostgresMigration {
    /// Copies `dataDirectory`'s `bluelibrary.sqlite` into the database at `url`; with `force`,
    /// a target that holds data is replaced. Returns the summary to print. Throws a
    /// `ConfigurationError` whose message says what went wrong (nothing was changed then).
    /// `password` (from `BLUELIBRARY_DATABASE_PASSWORD_FILE`) is given to libpq apart from the URL.
    public static func run(dataDirectory: String, url: String, password: String? = nil, force: Bool) throws(ConfigurationError) -> String {
        let path = URL(fileURLWithPath: dataDirectory).appendingPathComponent("bluelibrary.sqlite").path
        let started = ContinuousClock.now
        let summary: DatabaseMigration.Summary
        do {
            summary = try DatabaseMigration.copy(fromSQLiteAt: path, toDatabaseAt: url, password: password, replacing: force)
        } catch {
            throw ConfigurationError("migration failed, nothing was copied (the transaction rolled back): \(error)")
        }
        return describe(summary, source: path, elapsed: ContinuousClock.now - started)
    }

    static func describe(_ summary: DatabaseMigration.Summary, source: String, elapsed: Duration) -> String {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        var lines = [
            "Copied \(source) into PostgreSQL in one transaction (\(String(format: "%.1f", seconds)) s)"
                + (summary.replaced ? ", replacing what the target held:" : ":")
        ]
        for library in summary.libraries {
            let lift = library.versionLift > 0
                ? " (lifted by \(library.versionLift), above the target's old version of it)" : ""
            lines.append(library.deleted
                ? "  library \(library.name) (deleted): version \(library.version)\(lift)"
                : "  library \(library.name): \(library.albums) albums, version \(library.version)\(lift), order checksum \(library.checksum)")
        }
        let tables: [(String, String)] = [
            ("undo_commands", "undo commands"), ("saved_states", "saved states"), ("library_changes", "changes"),
            ("views", "views"), ("settings", "settings documents"), ("access_keys", "API keys"),
            ("access_failures", "failed-attempt records"), ("idempotency_keys", "idempotency keys"), ("secrets", "secrets"),
        ]
        lines.append("  " + tables.map { "\($0.1): \(summary.rows[$0.0] ?? 0)" }.joined(separator: ", "))
        lines.append(
            "Verified against the source (SQLite) before the commit: every table's row count; each library's album count, "
                + "album_count column, version, and order checksum (FNV-1a over its album ids in order). "
                + "Other column values are copied as read, not compared one by one.")
        return lines.joined(separator: "\n")
    }
}
