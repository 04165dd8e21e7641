import AlbumStoreContract
import BlueLibraryAPI
import Foundation
import HTTPTestSupport
import Library
import Postgres
import ServerRecords
import SQLite
@testable import Storage
import TestThreads
import Testing

/// The PostgreSQL schema: applied once however many instances start at once, the same tables,
/// columns and indexes as SQLite's, and SQLite's NOCASE order from the folded sort keys.
@Suite("PostgreSQL schema", .ownThreads)
struct PostgresSchemaTests {
    @Test("three instances migrating at once: all succeed, the schema is applied once")
    func concurrentMigrators() throws {
        let database = try TestDatabase()
        let pools = (0..<3).map { _ in database.pool(size: 1) }
        let results = concurrently(3) { index in try PostgresSchema.migrate(pool: pools[index]) }
        let applied = try results.map { try $0.get() }
        #expect(applied.filter { !$0.isEmpty } == [PostgresSchema.identifiers], "exactly one applied every migration")
        #expect(applied.filter(\.isEmpty).count == 2, "the others waited, then found nothing to do")
        try pools[0].withConnection { connection in
            #expect(try PostgresSchema.appliedIdentifiers(connection) == PostgresSchema.identifiers)
            #expect(try connection.scalar("SELECT COUNT(*) FROM libraries", as: Int.self) == 1)
            let row = try connection.firstRow("SELECT name, version, deleted, album_count FROM libraries") { row in
                "\(try row.string(0)) \(try row.int(1)) \(try row.int(2)) \(try row.int(3))"
            }
            #expect(row == "default 0 0 0")
            let signals = try connection.query("SELECT name, generation FROM server_signals ORDER BY name") { row in
                "\(try row.string(0))=\(try row.int(1))"
            }
            #expect(signals == ["access=0", "settings=0"])
        }
        #expect(try PostgresSchema.migrate(pool: pools[2]).isEmpty, "a later start does nothing")
    }

    @Test("a database migrated by a newer version is refused (a downgrade), nothing applied")
    func newerSchemaIsRefused() throws {
        let pool = try TestDatabase().migratedPool(size: 1)
        _ = try pool.withConnection { connection in
            try connection.run("INSERT INTO schema_migrations (identifier, applied_at) VALUES ($1, 0)", [.text("v999-from-the-future")])
        }
        #expect { try PostgresSchema.migrate(pool: pool) } throws: { error in
            (error as? NewerSchemaError)?.unknownMigrations == ["v999-from-the-future"]
        }
        let applied = try pool.withConnection { connection in try PostgresSchema.appliedIdentifiers(connection) }
        #expect(applied == PostgresSchema.identifiers + ["v999-from-the-future"])
    }

    @Test("every SQLite table, column and index exists in PostgreSQL by the same name")
    func mirrorsSQLite() throws {
        let directory = try TemporaryDirectory()
        _ = try SQLiteAlbumStore(path: directory.file("mirror.sqlite"))
        let sqlite = try Connection(path: directory.file("mirror.sqlite"), mode: .readOnly)
        let tables = try sqlite.query(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations'"
            // (not the search index: an FTS5 table and its shadow tables, derived from albums)
            + " AND name NOT GLOB 'albums_search*' ORDER BY name"
        ) { try $0.string(0) }
        let sqliteIndexes = try sqlite.query(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'") { try $0.string(0) }
        let pool = try TestDatabase().migratedPool()
        try pool.withConnection { postgres in
            let postgresTables = try postgres.query(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name"
            ) { try $0.string(0) }
            #expect(Set(postgresTables) == Set(tables + ["schema_migrations", "server_signals"]))
            for table in tables {
                let sqliteColumns = Set(try sqlite.query("SELECT name FROM pragma_table_xinfo(?1)", [.text(table)]) { try $0.string(0) })
                let postgresColumns = Set(try postgres.query(
                    "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1",
                    [.text(table)]
                ) { try $0.string(0) })
                #expect(sqliteColumns.subtracting(postgresColumns).isEmpty, "\(table) lacks columns")
                let postgresOnly = Set(SchemaHistory.current.table(table)?.columns.filter(\.postgresOnly).map(\.name) ?? [])
                #expect(postgresColumns.subtracting(sqliteColumns) == postgresOnly, "\(table) has extra columns")
                // NOT NULL where SQLite says so; nullable where SQLite allows NULL (its primary keys aside).
                let sqliteRequired = Set(try sqlite.query(
                    "SELECT name FROM pragma_table_info(?1) WHERE \"notnull\" = 1 OR pk > 0", [.text(table)]) { try $0.string(0) })
                let postgresRequired = Set(try postgres.query(
                    "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 AND is_nullable = 'NO'",
                    [.text(table)]
                ) { try $0.string(0) })
                #expect(postgresRequired == sqliteRequired, "\(table) NOT NULL")
            }
            let postgresIndexes = Set(try postgres.query("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'") {
                try $0.string(0)
            })
            #expect(Set(sqliteIndexes).subtracting(postgresIndexes).isEmpty)
        }
    }

    @Test("title_key and artist_key order like SQLite's COLLATE NOCASE")
    func caseFoldedKeysOrderLikeNoCase() throws {
        let titles = ["b", "B", "_x", "a", "Z", "[", "`", "é", "É", "ab", "aB", "AB", "Ab", "zz", "Zz", "Ω", "ω", "1", " a", "a "]
        let directory = try TemporaryDirectory()
        let sqlite = try Connection(path: directory.file("nocase.sqlite"))
        try sqlite.execute("CREATE TABLE t (id TEXT, title TEXT)")
        let pool = try TestDatabase().migratedPool()
        try pool.withConnection { postgres in
            for (number, title) in titles.enumerated() {
                let id = String(format: "%03d", number)
                try sqlite.run("INSERT INTO t VALUES (?1, ?2)", [.text(id), .text(title)])
                try postgres.run("""
                    INSERT INTO albums (library, album_id, bucket, pos, title, artist, genre, created_at, updated_at)
                    VALUES (1, $1, 1, $2, $3, $3, 'g', 0, 0)
                    """, [.text(id), .integer(Int64(number)), .text(title)])
            }
            let expected = try sqlite.query("SELECT id FROM t ORDER BY title COLLATE NOCASE, id") { try $0.string(0) }
            let byTitle = try postgres.query("SELECT album_id FROM albums ORDER BY title_key, album_id") { try $0.string(0) }
            let byArtist = try postgres.query("SELECT album_id FROM albums ORDER BY artist_key, album_id") { try $0.string(0) }
            #expect(byTitle == expected)
            #expect(byArtist == expected)
            let equalToB = try postgres.query(
                "SELECT album_id FROM albums WHERE artist_key = \(PostgresSchema.caseFolded("$1")) ORDER BY album_id", [.text("b")]
            ) { try $0.string(0) }
            let expectedEqual = try sqlite.query("SELECT id FROM t WHERE title = ?1 COLLATE NOCASE ORDER BY id", [.text("b")]) {
                try $0.string(0)
            }
            #expect(equalToB == expectedEqual)
        }
    }
}

extension PostgresSchemaTests {
    /// Runs `migrations` (the first ones of `PostgresSchema.migrations`) on an empty database
    /// and records them as a server of that version would: a database as that version left it.
    static func migrate(_ connection: PostgresConnection, through migrations: ArraySlice<(identifier: String, statements: String)>) throws {
        try connection.execute("""
            CREATE TABLE schema_migrations (seq bigint GENERATED ALWAYS AS IDENTITY, identifier text COLLATE "C" PRIMARY KEY, applied_at bigint NOT NULL)
            """)
        for migration in migrations {
            try connection.execute(migration.statements)
            try connection.run("INSERT INTO schema_migrations (identifier, applied_at) VALUES ($1, 0)", [.text(migration.identifier)])
        }
    }
}

/// A PostgreSQL database from before keys (v10, with a token) upgraded by v11: the token is the
/// admin key `token` for every library, with its hash, and `access_token` is gone.
@Suite("PostgreSQL: the token of a database from before keys", .ownThreads)
struct PostgresKeysUpgradeTests {
    @Test func theTokenBecomesTheAdminKeyToken() throws {
        let pool = try TestDatabase().pool(size: 1)
        let before = PostgresSchema.migrations.prefix { $0.identifier != "v11-access-keys" }
        #expect(before.last?.identifier == "v10-search-positions")
        try pool.withConnection { connection in
            try PostgresSchemaTests.migrate(connection, through: before)
            try connection.run(
                "INSERT INTO access_token (id, algorithm, salt, hash, iterations, updated_at) VALUES (1, 'pbkdf2-sha256', $1, $2, 1000, 1700000000000)",
                [.bytes([1, 2, 3]), .bytes([4, 5, 6])])
        }
        let applied = try PostgresSchema.migrate(pool: pool)
        #expect(applied.first == "v11-access-keys" && applied == PostgresSchema.migrations.dropFirst(before.count).map(\.identifier))
        let records = PostgresServerRecords(pool: pool)
        let keys = try records.accessKeys()
        #expect(keys.map(\.id) == ["token"] && keys.first?.scopes == [.admin] && keys.first?.libraries == nil)
        #expect(keys.first?.secret == TokenHash(algorithm: TokenHash.pbkdf2SHA256, salt: [1, 2, 3], hash: [4, 5, 6], iterations: 1000))
        let dropped = try pool.withConnection { connection in
            try connection.scalar("SELECT to_regclass('access_token') IS NULL", as: Bool.self)
        }
        #expect(dropped == true)
    }
}

/// A PostgreSQL database from before the genre sort (v11) upgraded by v12: a store opening it
/// fills every album's genre key, so `sort=genre` orders the albums written before.
@Suite("PostgreSQL: the genre keys of a database from before the genre sort", .ownThreads)
struct PostgresGenreSortUpgradeTests {
    @Test func aStoreFillsTheGenreKeysOfOlderAlbums() throws {
        let pool = try TestDatabase().pool(size: 2)
        let before = PostgresSchema.migrations.prefix { $0.identifier != "v12-genre-sort" }
        #expect(before.last?.identifier == "v11-access-keys")
        let genres = ["rock", "Ambient", "Électro", "jazz", "ROCK", "Blues"]
        try pool.withConnection { connection in
            try PostgresSchemaTests.migrate(connection, through: before)
            try connection.run("INSERT INTO buckets (library, ord, id, size) VALUES (1, 0, 1, $1)", [.integer(Int64(genres.count))])
            try connection.run("UPDATE libraries SET album_count = $1, version = 1 WHERE id = 1", [.integer(Int64(genres.count))])
            for (n, genre) in genres.enumerated() {
                try connection.run("""
                    INSERT INTO albums (library, album_id, bucket, pos, title, artist, genre, created_at, updated_at,
                        search_text, title_sort, artist_sort)
                    VALUES (1, $1, 1, $2, $3, 'Artist', $4, 1700000000000, 1700000000000, $5, $6, 'artist')
                    """, [.text(AlbumStoreContract.id(UInt64(n + 1)).rawValue), .integer(Int64(n) * 1024), .text("Title \(n)"),
                          .text(genre), .text(SearchText.document(title: "Title \(n)", artist: "Artist", genre: genre)),
                          .text("title \(n)")])
            }
        }
        let store = try PostgresAlbumStore(pool: pool)
        let sorted = try store.read(.default) { try $0.albums(matching: .all, sort: AlbumSort(.genre), from: .start, limit: 10) } ?? []
        #expect(sorted.map(\.genre) == ["Ambient", "Blues", "Électro", "jazz", "rock", "ROCK"], "folded as the title sort folds, ties by id")
        let unfilled = try pool.withConnection { try $0.scalar("SELECT count(*) FROM albums WHERE genre_sort IS NULL", as: Int64.self) }
        #expect(unfilled == 0)
    }
}
