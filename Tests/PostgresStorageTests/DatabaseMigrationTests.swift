import Essentials
import Foundation
import HTTPTestSupport
import Library
import Postgres
import SQLite
import ServerRecords
import Storage
import TestThreads
import Testing

/// `bluelibrary migrate`'s copy: a SQLite store with several libraries, reordered albums, undo,
/// states, changes, views, settings and access records, copied into PostgreSQL and read back.
@Suite("SQLite to PostgreSQL migration", .ownThreads)
struct DatabaseMigrationTests {
    @Test("everything is copied: every table row for row, each library's order, the id sequences")
    func copiesEverything() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("bluelibrary.sqlite")
        let source = try SourceFixture.make(at: path)
        let pool = try TestDatabase().pool()
        let summary = try DatabaseMigration.copy(fromSQLiteAt: path, to: pool, replacing: false)
        #expect(!summary.replaced)

        // Every SQLite table, row for row (columns read from SQLite's own schema).
        try expectSameTables(sqlitePath: path, pool: pool, everyTableFilled: true)

        // Each library's albums in order, as the SQLite store reads them, and the summary's checksums.
        let expected = try SourceFixture.libraries(of: source)
        #expect(summary.libraries.map(\.name) == expected.map(\.name))
        try pool.withConnection { postgres in
            for library in expected {
                let albums = try postgres.query(
                    """
                    SELECT a.album_id, a.title, a.artist, a.genre, a.year, a.cover_url, a.created_at, a.updated_at
                    FROM libraries AS l JOIN buckets AS b ON b.library = l.id JOIN albums AS a ON a.bucket = b.id
                    WHERE l.name = $1 ORDER BY b.ord, a.pos
                    """, [.text(library.name)]
                ) { row in
                    Album(
                        id: AlbumID(try row.string(0))!, title: try row.string(1), artist: try row.string(2),
                        genre: try row.string(3), year: row.isNull(4) ? nil : try row.int(4),
                        coverUrl: row.isNull(5) ? nil : try row.string(5),
                        createdAt: Timestamp.date(milliseconds: try row.int64(6)),
                        updatedAt: Timestamp.date(milliseconds: try row.int64(7)))
                }
                #expect(albums == library.albums, "library \(library.name)")
                let copied = summary.libraries.first { $0.name == library.name }
                #expect(copied?.albums == library.albums.count)
                #expect(copied?.checksum == FNV1a.hex(FNV1a.hash(library.albums.flatMap { Array($0.id.rawValue.utf8) + [0x0A] })))
                #expect(copied?.version == library.version)
                #expect(copied?.deleted == library.deleted)
            }
            // New ids continue after the copied ones; the signals moved (running instances reload).
            let maxBucket = try postgres.scalar("SELECT MAX(id) FROM buckets", as: Int64.self) ?? 0
            #expect(try postgres.scalar("SELECT nextval('bucket_ids')", as: Int64.self)! > maxBucket)
            let maxLibrary = try postgres.scalar("SELECT MAX(id) FROM libraries", as: Int64.self) ?? 0
            let newLibrary = try postgres.scalar("INSERT INTO libraries (name) VALUES ('brand-new') RETURNING id", as: Int64.self)
            #expect(newLibrary! > maxLibrary)
            try postgres.run("DELETE FROM libraries WHERE name = 'brand-new'")
            #expect(try postgres.scalar("SELECT MIN(generation) FROM server_signals", as: Int64.self)! > 0)
        }

        // The stores beside the albums read back through PostgresServerRecords.
        let records = PostgresServerRecords(pool: pool)
        #expect(try records.loadSettings() == SourceFixture.settings)
        #expect(try records.tokenHash() == SourceFixture.token)
        #expect(try records.allFailedAttempts() == SourceFixture.failures)
        #expect(try records.secret(named: "cursor", orStore: [0]) == SourceFixture.cursorKey)
        let replay = try records.lookup(key: "answered", fingerprint: "f", now: SourceFixture.claimedAt, expiry: 60)
        #expect(replay == .replay(SourceFixture.answer))
    }

    @Test("a target holding data is refused and left alone; with replacing, it is replaced")
    func nonEmptyTarget() throws {
        let directory = try TemporaryDirectory()
        let first = directory.file("first.sqlite")
        _ = try SourceFixture.make(at: first)
        let pool = try TestDatabase().pool()
        let firstSummary = try DatabaseMigration.copy(fromSQLiteAt: first, to: pool, replacing: false)
        let oldDefault = try #require(firstSummary.libraries.first { $0.name == "default" })

        let second = directory.file("second.sqlite")
        let small = try SQLiteAlbumStore(path: second)
        try small.write(.default) { writer in
            for number in 0..<3 { try writer.insert(SourceFixture.album(900 + number), at: 0) }
            let version = try writer.bumpVersion()
            try writer.recordChange(LibraryChange(
                version: version, kind: .added, id: SourceFixture.album(900).id, index: 0, fromIndex: nil,
                recordedAt: Date(timeIntervalSince1970: 1_700_000_000)))
        }
        #expect {
            _ = try DatabaseMigration.copy(fromSQLiteAt: second, to: pool, replacing: false)
        } throws: { error in
            (error as? DatabaseMigration.Failure)?.kind == .targetNotEmpty
        }
        try expectSameTables(sqlitePath: first, pool: pool)

        let summary = try DatabaseMigration.copy(fromSQLiteAt: second, to: pool, replacing: true)
        #expect(summary.replaced)
        #expect(summary.libraries.map(\.albums) == [3])
        try expectSameTables(sqlitePath: second, pool: pool, except: ["libraries", "library_changes"])

        // The target held `default` (at a version above the small source's): the copy's versions
        // are lifted above it, library row and change feed alike, so none goes down or repeats.
        let sourceVersion = try small.versions(of: [.default])[0]
        #expect(oldDefault.version > sourceVersion, "the fixture makes the target's version the higher one")
        let copied = try #require(summary.libraries.first)
        #expect(copied.versionLift == oldDefault.version + 1)
        #expect(copied.version == sourceVersion + oldDefault.version + 1)
        try pool.withConnection { postgres in
            #expect(try postgres.scalar("SELECT version FROM libraries WHERE name = 'default'", as: Int64.self) == copied.version)
            let feed = try postgres.query("SELECT version FROM library_changes ORDER BY version") { try $0.int64(0) }
            #expect(!feed.isEmpty && feed.allSatisfy { $0 > oldDefault.version } && feed.last == copied.version)
        }
    }

    @Test("replacing is refused while another session is connected to the target, with what to do")
    func refusedWhileInstancesRun() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("bluelibrary.sqlite")
        _ = try SourceFixture.make(at: path)
        let database = try TestDatabase()
        let pool = database.pool()
        _ = try DatabaseMigration.copy(fromSQLiteAt: path, to: pool, replacing: false)

        do {
            let instance = try PostgresConnection(url: database.url)  // a running instance
            #expect {
                _ = try DatabaseMigration.copy(fromSQLiteAt: path, to: pool, replacing: true)
            } throws: { error in
                guard let failure = error as? DatabaseMigration.Failure else { return false }
                return failure.kind == .targetInUse && failure.message.contains("stop the instances first")
                    && failure.message.contains("bluelibrary")
            }
            try expectSameTables(sqlitePath: path, pool: pool)
            withExtendedLifetime(instance) {}
        }
        // The instance stopped (its backend goes a moment after the connection closes).
        #expect(try eventually {
            try pool.withConnection { postgres in
                try postgres.scalar(
                    "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
                    as: Int.self)
            } == 0
        })
        #expect(try DatabaseMigration.copy(fromSQLiteAt: path, to: pool, replacing: true).replaced)
    }

    @Test("a target an instance already migrated (only the default library) counts as empty")
    func migratedTargetIsEmpty() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("bluelibrary.sqlite")
        _ = try SourceFixture.make(at: path)
        let pool = try TestDatabase().migratedPool()
        let summary = try DatabaseMigration.copy(fromSQLiteAt: path, to: pool, replacing: false)
        #expect(!summary.replaced)
        try expectSameTables(sqlitePath: path, pool: pool)
    }

    /// Every table of the SQLite file equals its PostgreSQL copy, row for row, in every column
    /// SQLite's schema lists (album row ids aside: they are not copied).
    private func expectSameTables(
        sqlitePath: String, pool: PostgresPool, everyTableFilled: Bool = false, except: Set<String> = []
    ) throws {
        let sqlite = try Connection(path: sqlitePath, mode: .readOnly)
        let tables = try sqlite.query(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations'"
            // (not the search index: an FTS5 table and its shadow tables, derived from albums)
            + " AND name NOT GLOB 'albums_search*' ORDER BY name"
        ) { try $0.string(0) }
        #expect(tables.count == 12)
        try pool.withConnection { postgres in
            for table in tables where !except.contains(table) {
                let columns = try sqlite.query("SELECT name FROM pragma_table_info(?1)", [.text(table)]) { try $0.string(0) }
                    .filter { !(table == "albums" && $0 == "row") }
                let list = columns.joined(separator: ", ")
                let sqliteRows = try sqlite.query("SELECT \(list) FROM \(table)") { row in
                    try columns.indices.map { try Self.render(row.value($0)) }
                }.sorted { $0.lexicographicallyPrecedes($1) }
                let postgresRows = try postgres.query("SELECT \(list) FROM \(table)") { row in
                    columns.indices.map { Self.render(row.value($0)) }
                }.sorted { $0.lexicographicallyPrecedes($1) }
                #expect(postgresRows == sqliteRows, "table \(table)")
                #expect(!everyTableFilled || !sqliteRows.isEmpty, "the fixture fills table \(table)")
            }
        }
    }

    private static func render(_ value: SQLiteValue) throws -> String {
        switch value {
        case .null: "null"
        case .integer(let integer): "\(integer)"
        case .real(let real): "\(real)"
        case .text(let text): "'\(text)'"
        case .blob(let bytes): "x\(FNV1a.hex(FNV1a.hash(bytes)))/\(bytes.count)"
        }
    }

    private static func render(_ value: PostgresValue) -> String {
        switch value {
        case .null: "null"
        case .integer(let integer): "\(integer)"
        case .real(let real): "\(real)"
        case .text(let text): "'\(text)'"
        case .bytes(let bytes): "x\(FNV1a.hex(FNV1a.hash(bytes)))/\(bytes.count)"
        case .bool(let flag): "\(flag)"
        }
    }
}
