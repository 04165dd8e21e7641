import Foundation
import Postgres
import struct SQLite.NewerSchemaError

/// The PostgreSQL schema: `SchemaHistory`'s tables, columns and indexes spelled for PostgreSQL
/// (its first migration creates the shape after SQLite's v7 at once; later migrations follow
/// one by one), so the shared statements (`SQL.swift`) run on both engines, plus what several
/// instances on one database need. Append only: a shipped migration is never edited.
///
/// Differences from SQLite, each for a reason:
/// - Types: integers are `bigint`, blobs `bytea`. Every text column is `COLLATE "C"`, so
///   comparisons and `ORDER BY` (names, clients, album ids as tie-breaks) compare bytes like
///   SQLite's BINARY, whatever locale the cluster was created with. Flags stay integers
///   (`libraries.deleted` is 0/1), so `deleted = 0` reads the same in both.
/// - Times stay integer milliseconds since 1970 (`Milliseconds`), as SQLite stores them.
/// - Ids that concurrent instances allocate come from the database: `libraries.id` and
///   `albums.row` are identities, `buckets.id` defaults to `nextval('bucket_ids')` (SQLite's
///   `MAX(id) + 1` would hand two instances the same id).
/// - SQLite's `COLLATE NOCASE` (ASCII letters folded to lower case, then bytes) becomes stored
///   generated columns `title_key` and `artist_key`, `translate`d to lower case and
///   `COLLATE "C"`, which the sort indexes use. Folding to lower case (not upper) keeps
///   NOCASE's order of `_` and the other characters between `Z` and `a`. `year_key` is stored
///   too (PostgreSQL has no virtual generated columns).
/// - `server_signals`: one row per kind of shared server state (`settings`, `access`), its
///   `generation` bumped in every transaction that changes that state, so an instance learns
///   of a change made through another by reading one tiny table (`PostgresServerRecords`).
/// - No `WITHOUT ROWID`: PostgreSQL tables are heaps, the primary keys are plain indexes.
///
/// Several instances may start at once: `migrate` applies every pending migration in one
/// transaction that first takes a transaction-scoped advisory lock (`advisoryLockKey`), so the
/// second instance waits, then finds them recorded and does nothing. The lock goes with the
/// transaction, so no failure can leave it held on a pooled connection.
public enum PostgresSchema {
    /// The advisory lock key every migrator takes ("BlueLib" in ASCII).
    public static let advisoryLockKey: Int64 = 0x0042_6C75_654C_6962

    /// The names of the `server_signals` rows.
    public enum Signal {
        public static let settings = "settings"
        public static let access = "access"
    }

    /// The identifiers of every migration, in order.
    public static var identifiers: [String] { migrations.map(\.identifier) }

    /// Applies the pending migrations on a connection from `pool`; returns the identifiers this
    /// call applied (empty when another instance, or an earlier start, applied them).
    @discardableResult
    public static func migrate(pool: PostgresPool) throws -> [String] {
        try pool.withConnection { connection in try migrate(connection) }
    }

    /// Applies the pending migrations in one transaction under the advisory lock; returns the
    /// identifiers it applied. A failure rolls everything back and is rethrown; a database that
    /// records a migration this version does not know (a downgrade) is refused with
    /// `NewerSchemaError` before anything is applied.
    @discardableResult
    public static func migrate(_ connection: PostgresConnection) throws -> [String] {
        try connection.transaction(.readCommitted) {
            _ = try connection.query(lock, [.integer(advisoryLockKey)]) { _ in () }
            // After the lock: each statement of a READ COMMITTED transaction sees what the
            // previous holder committed.
            if try connection.scalar(migrationsTableExists, as: Bool.self) != true {
                try connection.execute(createMigrationsTable)
            }
            let applied = Set(try connection.query(appliedIdentifiers) { try $0.string(0) })
            // Written by a newer version (a downgrade): refused, nothing applied.
            let known = Set(identifiers)
            let unknown = try connection.query(appliedIdentifiers) { try $0.string(0) }.filter { !known.contains($0) }
            guard unknown.isEmpty else { throw NewerSchemaError(unknownMigrations: unknown) }
            var applying: [String] = []
            for migration in migrations where !applied.contains(migration.identifier) {
                try connection.execute(migration.statements)
                try connection.run(record, [.text(migration.identifier), .integer(Milliseconds.from(Date()))])
                applying.append(migration.identifier)
            }
            return applying
        }
    }

    /// The identifiers recorded as applied, in order of application (empty before the first
    /// migration).
    public static func appliedIdentifiers(_ connection: PostgresConnection) throws -> [String] {
        guard try connection.scalar(migrationsTableExists, as: Bool.self) == true else { return [] }
        return try connection.query(appliedIdentifiers) { try $0.string(0) }
    }

    /// `expression` with ASCII letters folded to lower case: what SQLite's `NOCASE` compares
    /// (the generated `*_key` columns use exactly this).
    public static func caseFolded(_ expression: String) -> String {
        "translate(\(expression), '\(asciiUppercase)', '\(asciiLowercase)')"
    }

    static let asciiUppercase = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    static let asciiLowercase = "abcdefghijklmnopqrstuvwxyz"

    // MARK: The migrator's own statements

    private static let lock = "SELECT pg_advisory_xact_lock($1)"
    private static let createMigrationsTable = """
        CREATE TABLE schema_migrations (
            seq bigint GENERATED ALWAYS AS IDENTITY,
            identifier text COLLATE "C" PRIMARY KEY,
            applied_at bigint NOT NULL
        )
        """
    private static let appliedIdentifiers = "SELECT identifier FROM schema_migrations ORDER BY seq"
    private static let record = "INSERT INTO schema_migrations (identifier, applied_at) VALUES ($1, $2)"
    private static let migrationsTableExists = "SELECT to_regclass('schema_migrations') IS NOT NULL"

    // MARK: Migrations

    /// Every migration, in order: its identifier and its statements. The first creates the
    /// shape of SQLite's v1 to v7 at once (`SchemaHistory.postgresBaselineShape`) with
    /// `server_signals`; each later migration of `SchemaHistory` follows under its own name.
    static let migrations: [(identifier: String, statements: String)] =
        [("v1-sqlite-v7-shape-and-server-signals", baseline)]
        + SchemaHistory.migrations.dropFirst(SchemaHistory.postgresBaseline).map { migration in
            (migration.identifier, migration.steps.flatMap { $0.statements(for: .postgres) }.joined(separator: "\n"))
        }

    /// The tables of SQLite's v1 to v7 in their final shape, the sequence for bucket ids, the
    /// `default` library, and `server_signals`.
    private static let baseline = (
        SchemaHistory.postgresBaselineShape.create(.postgres)
            + TableDefinition("server_signals", [
                Column.text("name").isPrimaryKey,
                Column.integer("generation").notNullable.defaulting(to: "0"),
            ]).create(.postgres)
            + ["INSERT INTO server_signals (name) VALUES ('\(Signal.settings)'), ('\(Signal.access)');"]
    ).joined(separator: "\n")
}
