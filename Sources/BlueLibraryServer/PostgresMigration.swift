import Foundation
import Postgres
import Storage

/// `bluelibrary migrate`'s work, for the command line (which sees only this module): copies the
/// SQLite database of a data directory into PostgreSQL (`DatabaseMigration`) and describes
/// what it copied.
public enum PostgresMigration {
    /// Copies `dataDirectory`'s `bluelibrary.sqlite` into the database at `url`; with `force`,
    /// a target that holds data is replaced. Returns the summary to print. Throws a
    /// `ConfigurationError` whose message says what went wrong (nothing was changed then).
    public static func run(dataDirectory: String, url: String, force: Bool) throws(ConfigurationError) -> String {
        let path = URL(fileURLWithPath: dataDirectory).appendingPathComponent("bluelibrary.sqlite").path
        let started = ContinuousClock.now
        let pool = PostgresPool(PostgresPool.Configuration(url: url, size: 1, statementTimeout: nil))
        let summary: DatabaseMigration.Summary
        do {
            summary = try DatabaseMigration.copy(fromSQLiteAt: path, to: pool, replacing: force)
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
            lines.append(library.deleted
                ? "  library \(library.name) (deleted): version \(library.version)"
                : "  library \(library.name): \(library.albums) albums, version \(library.version), order checksum \(library.checksum)")
        }
        let tables: [(String, String)] = [
            ("undo_commands", "undo commands"), ("saved_states", "saved states"), ("library_changes", "changes"),
            ("views", "views"), ("settings", "settings documents"), ("access_token", "token hashes"),
            ("access_failures", "failed-attempt records"), ("idempotency_keys", "idempotency keys"), ("secrets", "secrets"),
        ]
        lines.append("  " + tables.map { "\($0.1): \(summary.rows[$0.0] ?? 0)" }.joined(separator: ", "))
        lines.append("Verified: every table's row count, and each library's album count and order checksum read back from PostgreSQL.")
        return lines.joined(separator: "\n")
    }
}
