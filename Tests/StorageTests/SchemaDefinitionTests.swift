import BlueLibraryAPI
import Essentials
import Foundation
import HTTPTestSupport
import SQLite
@testable import Storage
import TestThreads
import Testing

/// The schema written once (`SchemaHistory`): what each engine's shipped migrations run never
/// changes, and what SQLite ends up with is the shape the migration copy and the stores read.
@Suite("Schema definitions", .ownThreads)
struct SchemaDefinitionTests {
    /// FNV-1a of each shipped migration's statements as SQLite runs them. A shipped migration
    /// must never change meaning: a database that ran it would not run it again. Change the
    /// schema with a new migration at the end of `SchemaHistory.migrations`, then add its sum here.
    static let shippedSQLite: [String: String] = [
        "v1-libraries-buckets-albums-undo-states": "fec63a03c5bd8f95",
        "v2-idempotency-keys": "b09096643795f91c",
        "v3-sort-indexes": "cacf6e7c8bfac878",
        "v4-change-log": "b7d017817774827f",
        "v5-settings-and-access": "ff97caff369c32f2",
        "v6-secrets": "6e324ce7343d13a8",
        "v7-catalog-global-ids-moves-views": "ebc35802db567adf",
        "v8-search-text": "94e1b4d3892ddba8",
        "v9-sort-keys-and-relevance": "8a27f4717e3d5a76",
        "v10-search-positions": "e982471e338a9db5",
        "v11-access-keys": "a78da1a0340c4b33",
        "v12-genre-sort": "97c5d71f637133fd",
    ]

    /// The same for PostgreSQL's migrations (`PostgresSchema.migrations`).
    static let shippedPostgres: [String: String] = [
        "v1-sqlite-v7-shape-and-server-signals": "5877b8f873d7dece",
        "v8-search-text": "d4809283dcc28e49",
        "v9-sort-keys-and-relevance": "f435c29ee9c2f18d",
        "v10-search-positions": "cbf29ce484222325",
        "v11-access-keys": "b759cacc104c5564",
        "v12-genre-sort": "1388acce3d8d4cd2",
    ]

    static func sum(_ text: String) -> String { FNV1a.hex(FNV1a.hash(Array(text.utf8))) }

    @Test("no shipped migration's statements changed, on either engine")
    func shippedMigrationsKeepTheirText() {
        for (identifier, steps) in SchemaHistory.migrations {
            let text = steps.flatMap { $0.statements(for: .sqlite) }.joined(separator: "\n")
            #expect(Self.shippedSQLite[identifier] == Self.sum(text), "SQLite \(identifier): \(Self.sum(text))")
        }
        #expect(Set(SchemaHistory.migrations.map(\.identifier)) == Set(Self.shippedSQLite.keys))
        for (identifier, text) in PostgresSchema.migrations {
            #expect(Self.shippedPostgres[identifier] == Self.sum(text), "PostgreSQL \(identifier): \(Self.sum(text))")
        }
        #expect(Set(PostgresSchema.migrations.map(\.identifier)) == Set(Self.shippedPostgres.keys))
    }

    @Test("SQLite's search index keeps a list for every prefix length a query is cut to, and its hash size")
    func searchIndexKeepsThePrefixesQueriesAskFor() throws {
        let directory = try TemporaryDirectory()
        _ = try SQLiteAlbumStore(path: directory.file("index.sqlite"))
        let sqlite = try Connection(path: directory.file("index.sqlite"), mode: .readOnly)
        let create = try sqlite.value("SELECT sql FROM sqlite_master WHERE name = 'albums_search'", as: String.self) ?? ""
        let lengths = (1...SearchQuery.ftsPrefixLength).map(String.init).joined(separator: " ")
        #expect(create.contains("prefix = '\(lengths)'"), "\(create)")
        #expect(create.contains("detail = 'full'"), "phrases need positions: \(create)")
        #expect(try sqlite.value("SELECT v FROM albums_search_config WHERE k = 'hashsize'", as: Int.self) == SchemaHistory.searchIndexHashSize)
    }

    @Test("a migrated SQLite database has exactly the tables, columns and indexes of the current shape")
    func sqliteHasTheCurrentShape() throws {
        let directory = try TemporaryDirectory()
        _ = try SQLiteAlbumStore(path: directory.file("shape.sqlite"))
        let sqlite = try Connection(path: directory.file("shape.sqlite"), mode: .readOnly)
        let shape = SchemaHistory.current
        let tables = try sqlite.query(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations'"
            // (not the search index: an FTS5 table and its shadow tables, derived from albums)
            + " AND name NOT GLOB 'albums_search*' ORDER BY rowid"
        ) { try $0.string(0) }
        #expect(tables == shape.tables.map(\.name))
        for table in shape.tables {
            let columns = try sqlite.query("SELECT name, \"notnull\" = 1 OR pk > 0 FROM pragma_table_xinfo(?1) ORDER BY cid", [.text(table.name)]) {
                "\(try $0.string(0)) \(try $0.bool(1) ? "required" : "nullable")"
            }
            let defined = table.columns.filter { !$0.postgresOnly }.map { column in
                "\(column.name) \(column.notNull || column.primaryKey || column.rowID || table.primaryKey.contains(column.name) ? "required" : "nullable")"
            }
            #expect(columns == defined, "\(table.name)")
        }
        let indexes = Set(try sqlite.query("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'") { try $0.string(0) })
        #expect(indexes == Set(shape.indexes.map(\.name)))
        // The search index: its FTS5 table and the triggers that keep it in step.
        #expect(try sqlite.value("SELECT sql FROM sqlite_master WHERE name = 'albums_search'", as: String.self)?
            .contains("USING fts5(") == true)
        let triggers = try sqlite.query("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY rowid") { try $0.string(0) }
        #expect(triggers == SchemaHistory.searchTriggers.map(\.name))
        // The migration copies every table and every column SQLite has but what PostgreSQL computes or assigns.
        #expect(DatabaseMigration.tables.map(\.name) == tables)
        #expect(DatabaseMigration.tables.first { $0.name == "albums" }?.columns.contains("row") == false)
        #expect(DatabaseMigration.tables.first { $0.name == "albums" }?.columns.contains("year_key") == false)
        #expect(DatabaseMigration.tables.first { $0.name == "libraries" }?.columns == ["id", "name", "version", "album_count", "display_name", "deleted", "sort_articles"])
    }
}
