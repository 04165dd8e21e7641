import Essentials
import Foundation
import Postgres
import SQLite

/// Copies a SQLite store into PostgreSQL (`bluelibrary migrate`): every table, in ONE
/// PostgreSQL transaction, verified before it commits.
///
/// What is copied, row for row with the same ids: libraries (display names, versions,
/// tombstones), the ordering's buckets and albums (so the order is the same structure, not
/// re-bucketed), undo stacks, saved states, the change feed, views, settings, the token hash
/// and failed attempts, idempotency keys and secrets (the cursor key too, so cursors handed
/// out before stay valid). Album row ids are not copied (nothing refers to them); the bucket
/// and library id sequences are moved past the copied ids.
///
/// The source is read in one snapshot (a SQLite read transaction). The target must be empty
/// (the schema, and nothing but the fresh `default` library) unless `replacing` is set, in
/// which case its data is truncated in the same transaction. Before the commit, every
/// library's album count and order checksum (FNV-1a over its album ids in order, each
/// followed by a newline) and every table's row count are read back from PostgreSQL and
/// compared with the source; any difference rolls everything back. Running instances on the
/// target are told (their signals are bumped, catalog and commit notifications are sent).
public enum DatabaseMigration {
    /// What was copied, for the summary the command prints.
    public struct Summary: Sendable, Equatable {
        public struct Library: Sendable, Equatable {
            public var name: String
            public var deleted: Bool
            public var albums: Int
            public var version: Int64
            /// FNV-1a over the album ids in order, as 16 hex digits.
            public var checksum: String
        }

        public var libraries: [Library] = []
        /// Rows per copied table, by table name.
        public var rows: [String: Int] = [:]
        /// Whether the target held data that was replaced.
        public var replaced = false
    }

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public enum Kind: Sendable { case targetNotEmpty, verificationFailed, sourceMissing }
        public var kind: Kind
        public var message: String
        public var description: String { message }
    }

    /// Copies the SQLite database at `sourcePath` (it must exist; it is migrated to the current
    /// SQLite schema first, as a server start would) into the database `pool` connects to.
    public static func copy(fromSQLiteAt sourcePath: String, to pool: PostgresPool, replacing: Bool) throws -> Summary {
        guard FileManager.default.fileExists(atPath: sourcePath) else {
            throw Failure(kind: .sourceMissing, message: "no database at \(sourcePath)")
        }
        var configuration = SQLiteAlbumStore.Configuration()
        configuration.checkpointing = .automatic
        configuration.diskReserveBytes = 0
        let source = try SQLiteAlbumStore(path: sourcePath, configuration: configuration)
        return try copy(from: source, to: pool, replacing: replacing)
    }

    /// Copies `source` into the database `pool` connects to (see the type's documentation).
    public static func copy(from source: SQLiteAlbumStore, to pool: PostgresPool, replacing: Bool) throws -> Summary {
        try PostgresSchema.migrate(pool: pool)
        return try source.database.read { sqlite in
            try pool.withConnection { postgres in
                try postgres.transaction(.readCommitted) {
                    var summary = Summary()
                    try postgres.execute(lockTables)
                    let held = try heldData(postgres)
                    if !held.isEmpty {
                        guard replacing else {
                            throw Failure(
                                kind: .targetNotEmpty,
                                message: "the target database already holds data (\(held.joined(separator: ", "))); --force replaces it")
                        }
                        summary.replaced = true
                    }
                    try postgres.execute(truncateTables)
                    for table in tables {
                        summary.rows[table.name] = try copy(table, from: sqlite, to: postgres)
                    }
                    try postgres.execute(afterCopy)
                    summary.libraries = try verify(sqlite, postgres, rows: summary.rows)
                    try notify(postgres, libraries: summary.libraries)
                    return summary
                }
            }
        }
    }

    // MARK: Copying

    /// A copied table: its name and the columns copied (generated columns and album row ids
    /// are left to PostgreSQL).
    struct Table {
        let name: String
        let columns: [String]
    }

    /// In an order that respects the foreign keys (libraries first).
    static let tables: [Table] = [
        Table(name: "libraries", columns: ["id", "name", "version", "album_count", "display_name", "deleted"]),
        Table(name: "buckets", columns: ["library", "ord", "id", "size"]),
        Table(
            name: "albums",
            columns: ["library", "album_id", "bucket", "pos", "title", "artist", "genre", "year", "cover_url",
                      "created_at", "updated_at"]),
        Table(name: "undo_commands", columns: ["library", "seq", "command"]),
        Table(name: "saved_states", columns: ["library", "client", "current_index", "album_id", "updated_at"]),
        Table(
            name: "library_changes",
            columns: ["library", "version", "kind", "album_id", "position", "recorded_at", "from_position", "peer"]),
        Table(
            name: "views",
            columns: ["id", "name", "sources", "filter_text", "filter_artist", "filter_genre", "filter_year_from",
                      "filter_year_to", "revision"]),
        Table(name: "settings", columns: ["id", "document", "updated_at"]),
        Table(name: "access_token", columns: ["id", "algorithm", "salt", "hash", "iterations", "updated_at"]),
        Table(name: "access_failures", columns: ["client", "attempt_count", "window_start", "locked_until"]),
        Table(name: "idempotency_keys", columns: ["key", "fingerprint", "created_at", "status", "headers", "body"]),
        Table(name: "secrets", columns: ["name", "value", "created_at"]),
    ]

    /// Rows per multi-row INSERT (albums have 11 columns: 5,500 parameters of PostgreSQL's 65,535).
    static let batchSize = 500

    /// Streams `table` from SQLite into PostgreSQL in batches; returns the rows copied. The
    /// statement text holds only our own table and column names and `$n` placeholders.
    private static func copy(_ table: Table, from sqlite: Connection, to postgres: PostgresConnection) throws -> Int {
        let columns = table.columns.joined(separator: ", ")
        var batch: [PostgresValue] = []
        batch.reserveCapacity(batchSize * table.columns.count)
        var copied = 0
        func flush() throws {
            guard !batch.isEmpty else { return }
            let rows = batch.count / table.columns.count
            try postgres.run(insert(into: table, rows: rows), batch)
            copied += rows
            batch.removeAll(keepingCapacity: true)
        }
        try sqlite.forEachRow("SELECT \(columns) FROM \(table.name)") { row in
            for column in table.columns.indices {
                batch.append(postgresValue(row.value(column)))
            }
            if batch.count == batchSize * table.columns.count { try flush() }
        }
        try flush()
        return copied
    }

    /// `INSERT INTO table (columns) VALUES ($1, …), (…)` for `rows` rows.
    static func insert(into table: Table, rows: Int) -> String {
        let width = table.columns.count
        let values = (0..<rows).map { row in
            "(" + (1...width).map { "$\(row * width + $0)" }.joined(separator: ", ") + ")"
        }
        return "INSERT INTO \(table.name) (\(table.columns.joined(separator: ", "))) VALUES \(values.joined(separator: ", "))"
    }

    private static func postgresValue(_ value: SQLiteValue) -> PostgresValue {
        switch value {
        case .null: .null
        case .integer(let integer): .integer(integer)
        case .real(let real): .real(real)
        case .text(let text): .text(text)
        case .blob(let bytes): .bytes(bytes)
        }
    }

    // MARK: Verifying

    /// Album ids of one library in order, in each engine's placeholder syntax.
    static let albumIDsInOrder = (
        sqlite: "SELECT a.album_id FROM buckets AS b JOIN albums AS a ON a.bucket = b.id WHERE b.library = ?1 ORDER BY b.ord, a.pos",
        postgres: "SELECT a.album_id FROM buckets AS b JOIN albums AS a ON a.bucket = b.id WHERE b.library = $1 ORDER BY b.ord, a.pos")
    private static let libraryInTarget = "SELECT album_count, version FROM libraries WHERE id = $1"
    private static let librariesInSource = "SELECT id, name, deleted, version, album_count FROM libraries ORDER BY name"

    /// Compares every library's albums in order and every table's row count; returns the
    /// libraries' summaries.
    private static func verify(_ sqlite: Connection, _ postgres: PostgresConnection, rows: [String: Int]) throws -> [Summary.Library] {
        for table in tables {
            let count = try postgres.scalar("SELECT COUNT(*) FROM \(table.name)", as: Int.self) ?? -1
            guard count == rows[table.name] else {
                throw Failure(kind: .verificationFailed, message: "\(table.name): \(count) rows in PostgreSQL, \(rows[table.name] ?? 0) copied")
            }
        }
        let libraries = try sqlite.query(librariesInSource) { row in
            (id: try row.int64(0), name: try row.string(1), deleted: try row.int(2) != 0, version: try row.int64(3),
             albumCount: try row.int(4))
        }
        var summaries: [Summary.Library] = []
        for library in libraries {
            var expected = OrderChecksum()
            try sqlite.forEachRow(albumIDsInOrder.sqlite, [.integer(library.id)]) { row in expected.add(try row.string(0)) }
            var actual = OrderChecksum()
            try postgres.forEachRow(albumIDsInOrder.postgres, [.integer(library.id)]) { row in actual.add(try row.string(0)) }
            let stored = try postgres.firstRow(libraryInTarget, [.integer(library.id)]) { row in
                (albumCount: try row.int(0), version: try row.int64(1))
            }
            guard actual == expected, expected.count == library.albumCount, stored?.albumCount == library.albumCount,
                stored?.version == library.version
            else {
                throw Failure(
                    kind: .verificationFailed,
                    message: "library \(library.name): \(actual.count) albums (checksum \(FNV1a.hex(actual.hash))) in PostgreSQL, "
                        + "\(expected.count) (checksum \(FNV1a.hex(expected.hash)), count column \(library.albumCount)) in SQLite, "
                        + "library row \(stored.map { "\($0.albumCount) albums, version \($0.version)" } ?? "missing")")
            }
            summaries.append(Summary.Library(
                name: library.name, deleted: library.deleted, albums: actual.count, version: library.version,
                checksum: FNV1a.hex(actual.hash)))
        }
        return summaries
    }

    /// The number of albums and FNV-1a over their ids in order, each followed by a newline.
    struct OrderChecksum: Equatable {
        private(set) var count = 0
        private(set) var hash = FNV1a.offsetBasis

        mutating func add(_ id: String) {
            FNV1a.update(&hash, with: Array(id.utf8) + [0x0A])
            count += 1
        }
    }

    // MARK: The target's state

    /// Kept from other writers (and the migrator) for the transaction; readers go on.
    private static let lockTables = """
        LOCK TABLE libraries, buckets, albums, undo_commands, saved_states, library_changes, views, settings,
            access_token, access_failures, idempotency_keys, secrets IN EXCLUSIVE MODE
        """
    private static let truncateTables = """
        TRUNCATE libraries, buckets, albums, undo_commands, saved_states, library_changes, views, settings,
            access_token, access_failures, idempotency_keys, secrets
        """
    /// The `default` library as the migration inserts it, untouched.
    private static let isFreshDefault =
        "name = 'default' AND version = 0 AND album_count = 0 AND deleted = 0 AND display_name IS NULL"
    /// The id sequences continue after the copied ids; every signal moves (settings, token and
    /// lockouts were replaced).
    private static let afterCopy = """
        SELECT setval('bucket_ids', COALESCE((SELECT MAX(id) FROM buckets), 0) + 1, false);
        SELECT setval(pg_get_serial_sequence('libraries', 'id'), COALESCE((SELECT MAX(id) FROM libraries), 0) + 1, false);
        UPDATE server_signals SET generation = generation + 1;
        """

    /// What the target holds ("3 albums", …): nothing for an empty target, one with the
    /// schema and the fresh `default` library only.
    private static func heldData(_ postgres: PostgresConnection) throws -> [String] {
        try tables.compactMap { table in
            let filter = table.name == "libraries" ? " WHERE NOT (\(isFreshDefault))" : ""
            let count = try postgres.scalar("SELECT COUNT(*) FROM \(table.name)\(filter)", as: Int.self) ?? 0
            return count == 0 ? nil : "\(table.name): \(count)"
        }
    }

    /// Tells running instances the catalog and every library changed (delivered at commit).
    private static func notify(_ postgres: PostgresConnection, libraries: [Summary.Library]) throws {
        _ = try postgres.query("SELECT pg_notify('bluelibrary_catalog', '')") { _ in () }
        for library in libraries {
            _ = try postgres.query("SELECT pg_notify('bluelibrary_commits', $1)", [.text(library.name)]) { _ in () }
        }
    }
}
