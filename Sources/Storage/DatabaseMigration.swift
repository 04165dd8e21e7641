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
/// which case its data is truncated in the same transaction.
///
/// Replacing a target that holds data:
/// - is refused while any other session is connected to the target database
///   (`pg_stat_activity`, this session excluded): instances running on it would keep serving
///   what they cached and wait on the copy's table locks. Stop them first. (An instance
///   connecting after that check waits for the copy's locks and then sees the copy.)
/// - never lets a library's version go down or repeat: a library whose name the target held
///   (deleted or not) gets its copied version, and its change feed's versions, lifted by the
///   target's old version of it + 1, so every copied version is above anything a client saw
///   from the target (ETags, `Last-Event-ID`s of the old data never match the new data).
///   Libraries the target did not hold keep the source's versions.
///
/// Verified before the commit (any difference rolls everything back): every copied table's row
/// count in PostgreSQL equals the source's `COUNT(*)` (read from SQLite in the same snapshot);
/// for every library, its album count and order checksum (FNV-1a over its album ids in order,
/// each followed by a newline) in PostgreSQL equal the source's, its `album_count` column
/// equals the source's, and its version equals the source's (plus the lift above). Column
/// values other than album ids and versions are not compared one by one. Running instances on the
/// target are told (their signals are bumped, catalog and commit notifications are sent).
public enum DatabaseMigration {
    /// What was copied, for the summary the command prints.
    public struct Summary: Sendable, Equatable {
        public struct Library: Sendable, Equatable {
            public var name: String
            public var deleted: Bool
            public var albums: Int
            /// In the target (the source's, lifted when the target held this library).
            public var version: Int64
            /// What the version (and its change feed) was lifted by: 0, or the target's old
            /// version of this library + 1.
            public var versionLift: Int64 = 0
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
        public enum Kind: Sendable { case targetNotEmpty, targetInUse, verificationFailed, sourceMissing }
        public var kind: Kind
        public var message: String
        public var description: String { message }
    }

    /// Copies the SQLite database at `sourcePath` into the PostgreSQL database at `url` (over one
    /// connection, with no statement timeout: the copy is one long transaction); `password`, if
    /// any, is given to libpq apart from the URL.
    public static func copy(fromSQLiteAt sourcePath: String, toDatabaseAt url: String, password: String?, replacing: Bool) throws -> Summary {
        var configuration = PostgresPool.Configuration(url: url, size: 1, statementTimeout: nil)
        configuration.password = password
        return try copy(fromSQLiteAt: sourcePath, to: PostgresPool(configuration), replacing: replacing)
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
                    let held = try heldData(postgres)
                    var lifts: [Int64: Int64] = [:]
                    if !held.isEmpty {
                        guard replacing else {
                            throw Failure(
                                kind: .targetNotEmpty,
                                message: "the target database already holds data (\(held.joined(separator: ", "))); --force replaces it")
                        }
                        try refuseOtherSessions(postgres)
                        summary.replaced = true
                    }
                    try postgres.execute(lockTables)
                    if summary.replaced { lifts = try versionLifts(sqlite, postgres) }
                    try postgres.execute(truncateTables)
                    for table in tables {
                        summary.rows[table.name] = try copy(table, from: sqlite, to: postgres, lifts: lifts)
                    }
                    try postgres.execute(afterCopy)
                    summary.libraries = try verify(sqlite, postgres, copied: summary.rows, lifts: lifts)
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

    /// Every table of the schema (`SchemaHistory.current`), in the order the migrations create
    /// them (which respects the foreign keys: libraries first), with the columns SQLite has and
    /// PostgreSQL does not compute or assign itself.
    static let tables: [Table] = SchemaHistory.current.tables.map { table in
        Table(
            name: table.name,
            columns: table.columns.filter { !$0.postgresOnly && $0.generated == nil && $0.copied }.map(\.name))
    }

    /// Rows per multi-row INSERT (albums have 15 columns copied: 7,500 parameters of PostgreSQL's 65,535).
    static let batchSize = 500

    /// Streams `table` from SQLite into PostgreSQL in batches; returns the rows copied. The
    /// statement text holds only our own table and column names and `$n` placeholders.
    /// `lifts` (library id → amount) is added to `libraries.version` and `library_changes.version`.
    private static func copy(
        _ table: Table, from sqlite: Connection, to postgres: PostgresConnection, lifts: [Int64: Int64]
    ) throws -> Int {
        let columns = table.columns.joined(separator: ", ")
        // (library id column, version column) of the tables whose versions may be lifted.
        var lifted: (library: Int, version: Int)?
        if !lifts.isEmpty, table.name == "libraries" || table.name == "library_changes",
           let library = table.columns.firstIndex(of: table.name == "libraries" ? "id" : "library"),
           let version = table.columns.firstIndex(of: "version") {
            lifted = (library, version)
        }
        var batch: [PostgresValue] = []
        batch.reserveCapacity(batchSize * table.columns.count)
        var copied = 0
        func flush() throws {
            guard !batch.isEmpty else { return }
            let rows = batch.count / table.columns.count
            try postgres.run(PostgresSQL.multiRowInsert(into: table.name, columns: table.columns, rows: rows), batch)
            copied += rows
            batch.removeAll(keepingCapacity: true)
        }
        try sqlite.forEachRow("SELECT \(columns) FROM \(table.name)") { row in
            let start = batch.count
            for column in table.columns.indices {
                batch.append(postgresValue(row.value(column)))
            }
            if let lifted, case .integer(let library) = batch[start + lifted.library], let lift = lifts[library],
               case .integer(let version) = batch[start + lifted.version] {
                batch[start + lifted.version] = .integer(version + lift)
            }
            if batch.count == batchSize * table.columns.count { try flush() }
        }
        try flush()
        return copied
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

    /// Compares every table's row count with the source's and every library's albums in order;
    /// returns the libraries' summaries.
    private static func verify(
        _ sqlite: Connection, _ postgres: PostgresConnection, copied: [String: Int], lifts: [Int64: Int64]
    ) throws -> [Summary.Library] {
        for table in tables {
            let count = try postgres.scalar("SELECT COUNT(*) FROM \(table.name)", as: Int.self) ?? -1
            let expected = try sqlite.query("SELECT COUNT(*) FROM \(table.name)") { try $0.int(0) }.first ?? -1
            guard count == expected, copied[table.name] == expected else {
                throw Failure(
                    kind: .verificationFailed,
                    message: "\(table.name): \(count) rows in PostgreSQL, \(expected) in SQLite (\(copied[table.name] ?? 0) copied)")
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
            let lift = lifts[library.id] ?? 0
            guard actual == expected, expected.count == library.albumCount, stored?.albumCount == library.albumCount,
                stored?.version == library.version + lift
            else {
                throw Failure(
                    kind: .verificationFailed,
                    message: "library \(library.name): \(actual.count) albums (checksum \(FNV1a.hex(actual.hash))) in PostgreSQL, "
                        + "\(expected.count) (checksum \(FNV1a.hex(expected.hash)), count column \(library.albumCount)) in SQLite, "
                        + "library row \(stored.map { "\($0.albumCount) albums, version \($0.version)" } ?? "missing")")
            }
            summaries.append(Summary.Library(
                name: library.name, deleted: library.deleted, albums: actual.count, version: library.version + lift,
                versionLift: lift, checksum: FNV1a.hex(actual.hash)))
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

    /// Kept from other writers (and the migrator) for the transaction. EXCLUSIVE MODE lets
    /// plain reads go on, but TRUNCATE then takes ACCESS EXCLUSIVE: nothing else reads these
    /// tables until the commit (hence the refusal while other sessions are connected).
    private static let lockTables = "LOCK TABLE \(tableNames) IN EXCLUSIVE MODE"
    private static let truncateTables = "TRUNCATE \(tableNames)"
    private static let tableNames = tables.map(\.name).joined(separator: ", ")
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

    /// Other client sessions on the target database (application name, address, pid).
    private static let otherSessions = """
        SELECT pid, COALESCE(application_name, ''), COALESCE(host(client_addr), 'local socket') FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
        ORDER BY pid
        """

    /// Throws ``Failure/Kind/targetInUse`` while other sessions are connected to the target.
    private static func refuseOtherSessions(_ postgres: PostgresConnection) throws {
        let sessions = try postgres.query(otherSessions) { row -> String in
            let pid = try row.int64(0), application = try row.string(1), address = try row.string(2)
            return "pid \(pid) (\(application.isEmpty ? "no application name" : application), \(address))"
        }
        guard sessions.isEmpty else {
            throw Failure(
                kind: .targetInUse,
                message: "\(sessions.count) other session(s) are connected to the target database: "
                    + sessions.prefix(5).joined(separator: "; ") + (sessions.count > 5 ? "; …" : "")
                    + ". Replacing data under running instances would leave them serving what they cached; "
                    + "stop the instances first, then run the migration again")
        }
    }

    /// For each source library whose name the target holds (deleted or not): source library id
    /// → the target's highest version of it (library row or change feed) + 1.
    private static func versionLifts(_ sqlite: Connection, _ postgres: PostgresConnection) throws -> [Int64: Int64] {
        let old = try postgres.query(
            """
            SELECT l.name, GREATEST(l.version, COALESCE((SELECT MAX(c.version) FROM library_changes AS c WHERE c.library = l.id), 0))
            FROM libraries AS l
            """
        ) { row in (try row.string(0), try row.int64(1)) }
        let highest = Dictionary(old, uniquingKeysWith: max)
        let source = try sqlite.query("SELECT id, name FROM libraries") { row in (try row.int64(0), try row.string(1)) }
        var lifts: [Int64: Int64] = [:]
        for (id, name) in source {
            if let version = highest[name] { lifts[id] = version + 1 }
        }
        return lifts
    }

    /// Tells running instances the catalog and every library changed (delivered at commit).
    private static func notify(_ postgres: PostgresConnection, libraries: [Summary.Library]) throws {
        _ = try postgres.query("SELECT pg_notify('bluelibrary_catalog', '')") { _ in () }
        for library in libraries {
            _ = try postgres.query("SELECT pg_notify('bluelibrary_commits', $1)", [.text(library.name)]) { _ in () }
        }
    }
}
