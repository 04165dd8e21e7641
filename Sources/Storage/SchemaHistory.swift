import BlueLibraryAPI

/// The schema of both engines, as an append-only list of migrations written once as
/// `SchemaStep`s (`SchemaDefinition.swift` says how each engine spells them).
///
/// Rules: a migration that has shipped is never edited, renamed or reordered; changes come as
/// new entries ("v8-...") at the end of `migrations`. SQLite runs every entry; PostgreSQL,
/// which started from the shape after v7, runs that shape as its own first migration and each
/// later entry as it is (`PostgresSchema`).
///
/// Layout (v1):
/// - `libraries`: one row per `LibraryID` (`name`), with the `version` (ETags, `outdated`)
///   and `album_count` (so `count()` is O(1)); both maintained in the writing transaction.
/// - `buckets`: the ordering's upper level. A library's albums are split into consecutive
///   buckets; `ord` is a sparse key ordering the buckets of a library, `size` the number of
///   albums in the bucket. `WITHOUT ROWID` clustered on `(library, ord)`, so summing sizes in
///   order is a covering range scan. `id` is the stable handle albums refer to.
/// - `albums`: the album fields plus `(bucket, pos)`, where `pos` is a sparse key ordering the
///   albums of one bucket. Timestamps are integer milliseconds since 1970 (UTC), which give
///   back exactly the domain's millisecond `Date`s (see `Milliseconds`). `album_id` is unique
///   per library (from v7: across libraries). No FOREIGN KEY on purpose: SQLite disables its truncate optimisation for a
///   table in a foreign-key relation, and wiping 1M albums row by row takes seconds, not
///   milliseconds (library rows are never deleted, so `library` cannot dangle).
///   `albums_by_position` is deliberately not UNIQUE: renumbering a bucket rewrites keys in
///   one statement, and SQLite checks UNIQUE row by row.
/// - `undo_commands`: the undo stack, `seq` increasing, `command` the JSON of `UndoCommand`.
/// - `saved_states`: one row per client; `updated_at` in milliseconds or NULL.
///
/// v2 adds `idempotency_keys`: one row per `Idempotency-Key` (scoped by the caller), with the
/// request's fingerprint, when it was claimed, and once answered the stored response
/// (`status` NULL while the request is in progress).
///
/// v3 adds one index per value sort of paged lists (`AlbumPages.swift`), each
/// ending in `album_id` (the tie-break), so a keyset page is one index seek at any depth.
/// `year_key` is `IFNULL(year, 0)` as a virtual generated column (computed, not stored): the
/// year sort's key must be a plain column for SQLite to seek a `(year_key, album_id) > (?, ?)`
/// row value on the index (it never matches an expression inside a row value).
///
/// v4 adds `library_changes`, the change feed: one row per version bump, written in the
/// mutation's own transaction, with `kind` (`added`, `updated`, `deleted`, `moved`,
/// `replaced`), the album id and index (NULL for `replaced`) and `recorded_at` in milliseconds.
/// Clustered on `(library, version)` (`WITHOUT ROWID`): that primary key is the one index both
/// reading a page (`version > ?`) and pruning the oldest rows (`ORDER BY version LIMIT n`)
/// need, so no secondary index is kept (each would cost every write a second B-tree insert).
///
/// v5 and v6 add the settings, access and secrets tables (see their steps below).
///
/// v7 (several libraries, views, moves between libraries):
/// - `libraries` gains `display_name` (NULL: the id, `name`, is shown) and `deleted` (0/1).
///   A deleted library is a tombstone: its albums, buckets, undo commands, saved states and
///   changes are gone, but its row stays with its `version`, so a library created again with
///   the id reuses the row and continues one above the old version (versions never repeat for
///   an id: old ETags and cursors never match the new library), and a row id once seen for a
///   name is that name's forever (`SQLiteAlbumStore`'s row-id cache never goes stale; whether
///   the library is live is checked in each transaction). `default` is inserted here, so it
///   exists from the start; before v7 a library row was made by the first write to it.
/// - `albums_by_album_id`: a UNIQUE index on `albums(album_id)`: album ids are unique across
///   libraries (it also answers `library(of:)`). The v1 `UNIQUE (library, album_id)` stays (it
///   cannot be dropped without rebuilding the table); it is implied by the new one. A database
///   that holds one id in two libraries (possible before v7) cannot migrate: the migration
///   fails on the duplicate and changes nothing.
/// - `library_changes` gains `from_position` (the index before a `moved`) and `peer` (for an
///   album moved between libraries: the library it came from (`added`) or left for
///   (`deleted`), by id).
/// - `views`: one row per composite view: `name`, `sources` (library ids in order, joined by
///   `,`, which ids never contain), the filter's conditions (`filter_text`, `filter_artist`,
///   `filter_genre`, `filter_year_from`, `filter_year_to`, NULL when absent) and `revision`.
///   Views name libraries by id without a reference: deleting a library leaves them alone.
enum SchemaHistory {
    /// Every migration, in order: its identifier and its steps. Append only.
    static let migrations: [(identifier: String, steps: [SchemaStep])] = [
        ("v1-libraries-buckets-albums-undo-states", v1),
        ("v2-idempotency-keys", v2),
        ("v3-sort-indexes", v3),
        ("v4-change-log", v4),
        ("v5-settings-and-access", v5),
        ("v6-secrets", v6),
        ("v7-catalog-global-ids-moves-views", v7),
        ("v8-search-text", v8),
        ("v9-sort-keys-and-relevance", v9),
        ("v10-search-positions", v10),
        ("v11-access-keys", v11),
        ("v12-genre-sort", v12),
    ]

    /// How many migrations PostgreSQL's first one covers (it creates their shape at once).
    static let postgresBaseline = 7

    /// The shape after every migration: the tables `bluelibrary migrate` copies, the columns
    /// each engine has.
    static let current = SchemaShape(migrations.flatMap(\.steps))

    /// The shape PostgreSQL's first migration creates: after v1 to v7.
    static let postgresBaselineShape = SchemaShape(migrations.prefix(postgresBaseline).flatMap(\.steps))

    // MARK: v1

    private static let v1: [SchemaStep] = [
        .createTable(TableDefinition("libraries", [
            Column.integer("id").with(rowID: true),
            Column.text("name").notNullable.isUnique,
            Column.integer("version").notNullable.defaulting(to: "0"),
            Column.integer("album_count").notNullable.defaulting(to: "0").checking("album_count >= 0"),
        ])),
        .createTable(TableDefinition("buckets", [
            Column.integer("library").notNullable.referencing("libraries (id)"),
            Column.integer("ord").notNullable,
            Column.integer("id").notNullable.isUnique.drawing(from: "bucket_ids"),
            Column.integer("size").notNullable.checking("size >= 0"),
        ], primaryKey: ["library", "ord"], clustered: true)),
        .createTable(TableDefinition("albums", [
            Column.integer("row").with(rowID: true).notCopied,
            Column.integer("library").notNullable,
            Column.text("album_id").notNullable,
            Column.integer("bucket").notNullable,
            Column.integer("pos").notNullable,
            Column.text("title").notNullable,
            Column.text("artist").notNullable,
            Column.text("genre").notNullable,
            Column.integer("year"),
            Column.text("cover_url"),
            Column.integer("created_at").notNullable,
            Column.integer("updated_at").notNullable,
        ], unique: [["library", "album_id"]])),
        .createIndex(IndexDefinition(name: "albums_by_position", table: "albums", columns: [.plain("bucket"), .plain("pos")])),
        .createTable(TableDefinition("undo_commands", [
            Column.integer("library").notNullable.referencing("libraries (id)"),
            Column.integer("seq").notNullable,
            Column.text("command").notNullable,
        ], primaryKey: ["library", "seq"], clustered: true)),
        .createTable(TableDefinition("saved_states", [
            Column.integer("library").notNullable.referencing("libraries (id)"),
            Column.text("client").notNullable,
            Column.integer("current_index").notNullable,
            Column.text("album_id"),
            Column.integer("updated_at"),
        ], primaryKey: ["library", "client"], clustered: true)),
    ]

    // MARK: v2

    private static let v2: [SchemaStep] = [
        .createTable(TableDefinition("idempotency_keys", [
            Column.text("key").isPrimaryKey,
            Column.text("fingerprint").notNullable,
            Column.integer("created_at").notNullable,
            Column.integer("status"),
            Column.text("headers"),
            Column.blob("body"),
        ])),
        .createIndex(IndexDefinition(name: "idempotency_keys_by_age", table: "idempotency_keys", columns: [.plain("created_at")])),
    ]

    // MARK: v3

    /// `year_key` (the year sort's key: no year sorts as 0) and, on PostgreSQL, the stored
    /// case-folded keys of the title and artist sorts; then the sort indexes.
    private static let v3: [SchemaStep] = [
        .addColumn(table: "albums", Column.integer("year_key").computed("COALESCE(year, 0)", sqlite: "IFNULL(year, 0)")),
        .addColumn(table: "albums", Column.text("title_key").computed(PostgresSchema.caseFolded("title")).onPostgresOnly),
        .addColumn(table: "albums", Column.text("artist_key").computed(PostgresSchema.caseFolded("artist")).onPostgresOnly),
    ] + [
        IndexDefinition(name: "albums_by_title", table: "albums", columns: [.plain("library"), .folded("title"), .plain("album_id")]),
        IndexDefinition(name: "albums_by_artist", table: "albums", columns: [.plain("library"), .folded("artist"), .plain("album_id")]),
        yearIndex, createdIndex,
    ].map(SchemaStep.createIndex)

    private static let yearIndex = IndexDefinition(
        name: "albums_by_year", table: "albums", columns: [.plain("library"), .plain("year_key"), .plain("album_id")])
    private static let createdIndex = IndexDefinition(
        name: "albums_by_created", table: "albums", columns: [.plain("library"), .plain("created_at"), .plain("album_id")])
    private static let titleSortIndex = IndexDefinition(
        name: "albums_by_title_sort", table: "albums", columns: [.plain("library"), .plain("title_sort"), .plain("album_id")])
    private static let artistSortIndex = IndexDefinition(
        name: "albums_by_artist_sort", table: "albums", columns: [.plain("library"), .plain("artist_sort"), .plain("album_id")])
    private static let genreSortIndex = IndexDefinition(
        name: "albums_by_genre_sort", table: "albums", columns: [.plain("library"), .plain("genre_sort"), .plain("album_id")])

    /// The sort indexes of the current schema, in the order the migrations create them: v3's
    /// year and creation indexes, v9's title and artist ones (over the stored sort keys; they
    /// replace v3's case-folded ones), v12's genre one. The one place their definitions live:
    /// a bulk import that drops the indexes for speed (`BulkImport.swift`) recreates them from these, so the
    /// schema (`sqlite_master`) reads exactly as after the migrations. Never edit one that has
    /// shipped: a changed index is a new migration (which must then update this list too).
    static let sortIndexes: [IndexDefinition] = [yearIndex, createdIndex, titleSortIndex, artistSortIndex, genreSortIndex]

    // MARK: v4

    private static let v4: [SchemaStep] = [
        .createTable(TableDefinition("library_changes", [
            Column.integer("library").notNullable,
            Column.integer("version").notNullable,
            Column.text("kind").notNullable.checking("kind IN ('added', 'updated', 'deleted', 'moved', 'replaced')"),
            Column.text("album_id"),
            Column.integer("position"),
            Column.integer("recorded_at").notNullable,
        ], primaryKey: ["library", "version"], clustered: true)),
    ]

    // MARK: v5

    /// The settings document (one row, JSON, see `LibrarySettings`), the write-protection
    /// token's hash (one row: algorithm, salt, PBKDF2 hash, iterations; never the token) and
    /// failed attempts per client address (`window_start`, `locked_until` in milliseconds).
    private static let v5: [SchemaStep] = [
        .createTable(TableDefinition("settings", [
            Column.integer("id").isPrimaryKey.checking("id = 1"),
            Column.text("document").notNullable,
            Column.integer("updated_at").notNullable,
        ])),
        .createTable(TableDefinition("access_token", [
            Column.integer("id").isPrimaryKey.checking("id = 1"),
            Column.text("algorithm").notNullable,
            Column.blob("salt").notNullable,
            Column.blob("hash").notNullable,
            Column.integer("iterations").notNullable.checking("iterations > 0"),
            Column.integer("updated_at").notNullable,
        ])),
        .createTable(TableDefinition("access_failures", [
            Column.text("client").isPrimaryKey,
            Column.integer("attempt_count").notNullable,
            Column.integer("window_start").notNullable,
            Column.integer("locked_until"),
        ], clustered: true)),
    ]

    // MARK: v6

    /// Server secrets by name (`cursor`: the HMAC key that seals paging cursors), made once and
    /// kept, so what they sealed stays valid across restarts and for every process sharing the
    /// database.
    private static let v6: [SchemaStep] = [
        .createTable(TableDefinition("secrets", [
            Column.text("name").isPrimaryKey,
            Column.blob("value").notNullable,
            Column.integer("created_at").notNullable,
        ], clustered: true)),
    ]

    // MARK: v7

    /// The global album-id index of v7, the one place its definition lives: v7 creates it, and
    /// a bulk import or a large library deletion that dropped it for speed (`BulkImport.swift`)
    /// recreates it from the same definition.
    static let albumIDIndex = IndexDefinition(name: "albums_by_album_id", table: "albums", columns: [.plain("album_id")], unique: true)

    /// The library catalog (display names, tombstones), globally unique album ids, move columns
    /// in the change feed, composite views (see the layout above).
    private static let v7: [SchemaStep] = [
        .addColumn(table: "libraries", Column.text("display_name")),
        .addColumn(table: "libraries", Column.integer("deleted").notNullable.defaulting(to: "0").checking("deleted IN (0, 1)")),
        .statement("INSERT INTO libraries (name) VALUES ('default') ON CONFLICT (name) DO NOTHING;"),
        .createIndex(albumIDIndex),
        .addColumn(table: "library_changes", Column.integer("from_position")),
        .addColumn(table: "library_changes", Column.text("peer")),
        .createTable(TableDefinition("views", [
            Column.text("id").isPrimaryKey,
            Column.text("name").notNullable,
            Column.text("sources").notNullable,
            Column.text("filter_text"),
            Column.text("filter_artist"),
            Column.text("filter_genre"),
            Column.integer("filter_year_from"),
            Column.integer("filter_year_to"),
            Column.integer("revision").notNullable,
        ], clustered: true)),
    ]

    // MARK: v8

    /// `albums.search_text`: what an album is found by (`SearchText.document`), written with
    /// every album row. NULL on the rows from before, until a store opening the database fills
    /// them in (`SearchTextBackfill`): the folding is Swift's, so no SQL statement can compute
    /// it. The partial index `albums_without_search_text` holds just those rows, so the store
    /// finds them without a scan, and finds at once that there are none.
    ///
    /// The search index finds the albums that have every word of a query without reading the
    /// others (`SearchIndex` says how a page uses it): on SQLite an FTS5 table over
    /// `search_text` kept in step by triggers, on PostgreSQL a GIN index. v9 replaces both (see
    /// there); v8's exact statements stay below, as shipped.
    private static let v8: [SchemaStep] = [
        .addColumn(table: "albums", Column.text("search_text")),
        .createIndex(IndexDefinition(
            name: "albums_without_search_text", table: "albums", columns: [.plain("row")], condition: "search_text IS NULL")),
        .engineSpecific(
            sqlite: [
                """
                CREATE VIRTUAL TABLE albums_search USING fts5(
                    search_text, content = 'albums', content_rowid = 'row', tokenize = 'ascii', detail = 'none', prefix = '1 2 3 4');
                """,
                "INSERT INTO albums_search (albums_search) VALUES ('rebuild');",
                "INSERT INTO albums_search (albums_search, rank) VALUES ('crisismerge', 1999);",
            ] + v8Triggers,
            postgres: ["CREATE INDEX albums_search ON albums USING gin (array_to_tsvector(string_to_array(search_text, ' ')));"]),
    ]

    private static let v8Triggers = [
        """
        CREATE TRIGGER albums_search_insert AFTER INSERT ON albums BEGIN
            INSERT INTO albums_search (rowid, search_text) VALUES (new.row, new.search_text);
        END;
        """,
        """
        CREATE TRIGGER albums_search_delete AFTER DELETE ON albums BEGIN
            INSERT INTO albums_search (albums_search, rowid, search_text) VALUES ('delete', old.row, old.search_text);
        END;
        """,
        """
        CREATE TRIGGER albums_search_update AFTER UPDATE OF search_text ON albums
        WHEN old.search_text IS NOT new.search_text BEGIN
            INSERT INTO albums_search (albums_search, rowid, search_text) VALUES ('delete', old.row, old.search_text);
            INSERT INTO albums_search (rowid, search_text) VALUES (new.row, new.search_text);
        END;
        """,
    ]

    // MARK: v9

    /// Sort keys, and search text that tells the fields apart (for relevance).
    ///
    /// - The title and artist sorts' keys (`SortText`: folded as search folds, the artist
    ///   without a leading article of `libraries.sort_articles`) are stored with every row
    ///   (`title_sort`, `artist_sort`), and v3's case-folded indexes of those sorts make way for
    ///   `albums_by_title_sort` and `albums_by_artist_sort` over the keys.
    ///   `libraries.sort_articles` holds the articles the library's artist keys were made with
    ///   (`SortArticles`' stored form; `the a an` until the setting changes, see
    ///   `SortKeyRebuild`).
    /// - `search_text` now marks where the artist and the genre begin (`SearchText.document`),
    ///   so every row's is made again: the migration empties it, and `SearchTextBackfill` fills
    ///   it and the sort keys at the first start (about a second per 100,000 albums).
    /// - The search index is made again over the text with each genre token marked (`_rock`;
    ///   `searchIndexText`), so it tells an album with a word in its title or artist from one
    ///   with the word in its genre only: the ranks of relevance where every word is in the
    ///   title or artist are read from the index (`SearchIndex.candidatePath`). Neither engine
    ///   tokenizes or folds anything itself; both find exactly the tokens Swift made.
    ///   - SQLite: `albums_search`, an FTS5 table over the view `albums_search_content`
    ///     (`row`, `search_index`: the marked text), external content, rowid = `albums.row`;
    ///     the `ascii` tokenizer with `_` a token character splits at the spaces (every byte of
    ///     a non-ASCII letter is part of a token); `detail=none`: which rows hold a token, not
    ///     where, as a page checks the words on the rows it reads anyway; the prefixes of 1 to 4
    ///     characters indexed too, so a search as one types (`q=j`, `q=pink flo`) reads one
    ///     list rather than merging those of every token it begins. Kept in step by the
    ///     triggers `SchemaHistory.searchTriggers`, in the writing statement's transaction.
    ///   - PostgreSQL: `albums_search`, a GIN index over the marked tokens as a `tsvector`
    ///     (`searchVector`: no parser, no dictionary).
    private static let v9: [SchemaStep] = [
        .addColumn(table: "albums", Column.text("title_sort")),
        .addColumn(table: "albums", Column.text("artist_sort")),
        .addColumn(table: "libraries", Column.text("sort_articles").notNullable.defaulting(to: "'\(SortArticles.standard)'")),
        .dropIndex("albums_by_title"),
        .dropIndex("albums_by_artist"),
        .createIndex(titleSortIndex),
        .createIndex(artistSortIndex),
        .engineSpecific(
            // IF EXISTS: a database of a build between v8's first form and its last has no index.
            sqlite: searchTriggers.map { "DROP TRIGGER IF EXISTS \($0.name);" } + ["DROP TABLE IF EXISTS albums_search;"],
            postgres: ["DROP INDEX IF EXISTS albums_search;"]),
        .statement("UPDATE albums SET search_text = NULL;"),
        .engineSpecific(
            sqlite: [
                "CREATE VIEW albums_search_content AS SELECT row, \(searchIndexText("search_text", .sqlite)) AS search_index FROM albums;",
                """
                CREATE VIRTUAL TABLE albums_search USING fts5(
                    search_index, content = 'albums_search_content', content_rowid = 'row', tokenize = "ascii tokenchars '_'",
                    detail = 'none', prefix = '1 2 3 4');
                """,
                // Every row of `albums` has its entry (an empty one while `search_text` is NULL,
                // before `SearchTextBackfill` fills it), so each trigger's 'delete' finds the entry
                // it removes.
                "INSERT INTO albums_search (albums_search) VALUES ('rebuild');",
                // FTS5 merges its segments a little after each write (automerge), and all at once
                // when 16 wait at one level (crisismerge): at 1M albums that one merge held a
                // single add for up to 220 ms, and the slowest 1% of adds took 15 ms (Python's
                // sqlite3, one add per transaction). At its largest (1999) only the gradual merges
                // run: slowest 1% 0.4 ms, slowest 24 ms, queries as fast.
                "INSERT INTO albums_search (albums_search, rank) VALUES ('crisismerge', 1999);",
            ] + searchTriggers.map(\.create),
            postgres: ["CREATE INDEX albums_search ON albums USING gin (\(searchVector("search_text")));"]),
    ]

    // MARK: v10

    /// SQLite's search index made again to know where each token stands, and the prefixes of up
    /// to 8 characters, so the index alone finds the albums of each rank of relevance
    /// (`SearchIndex.candidatePath`): those with the words one after another in the title or
    /// artist (an FTS5 phrase, which needs `detail = full`), and a prefix as typed rather than
    /// every token of its first 4 characters (FTS5 merges the lists of every token a longer
    /// prefix begins before the AND with the other words can skip any: 3 to 16 ms at 1,000,000
    /// albums). No row sizes (`columnsize = 0`: nothing ranks by BM25). FTS5 keeps up to
    /// `searchIndexHashSize` bytes of new entries in memory before it writes them as a segment
    /// (1 MB by default), so a rebuild at 1,000,000 albums writes the index once rather than in
    /// segments merged as they pile up: 2.6 s where it took 6.9 s, the index 117 MB (30 MB
    /// before v10). 'optimize' leaves it as one segment: right after a rebuild in segments, the
    /// merges FTS5 then does a little at each write made the slowest adds take 16 ms for a
    /// while. An add costs as much as before. PostgreSQL's GIN index is unchanged (it has no
    /// positions: a phrase is checked on the rows, as before).
    private static let v10: [SchemaStep] = [
        .engineSpecific(
            sqlite: [
                "DROP TABLE albums_search;",
                """
                CREATE VIRTUAL TABLE albums_search USING fts5(
                    search_index, content = 'albums_search_content', content_rowid = 'row', tokenize = "ascii tokenchars '_'",
                    detail = 'full', prefix = '1 2 3 4 5 6 7 8', columnsize = 0);
                """,
                "INSERT INTO albums_search (albums_search, rank) VALUES ('hashsize', \(searchIndexHashSize));",
                "INSERT INTO albums_search (albums_search) VALUES ('rebuild');",
                "INSERT INTO albums_search (albums_search) VALUES ('optimize');",
                "INSERT INTO albums_search (albums_search, rank) VALUES ('crisismerge', 1999);",
            ],
            postgres: []),
    ]

    /// The memory FTS5 may fill with new index entries in one transaction before writing them
    /// (its 'hashsize'; v10), in every write transaction: a rebuild at 1,000,000 albums fills
    /// about 60 MB; a transaction of single writes (up to 10,000 appends below
    /// `BulkImport.threshold`, a backfill of `search_text`) less than its share of that.
    static let searchIndexHashSize = 256 << 20

    /// The text the search index holds for the stored `search_text` in `column`: the same, each
    /// genre token (after `SearchText.genreMark`) with `_` in front. Tokens are letters and
    /// digits, so no word of a query is ever a marked token: a genre word is found in the
    /// index as either form, a title or artist word as the plain one only.
    static func searchIndexText(_ column: String, _ dialect: SQLDialect) -> String {
        let mark = dialect.position("\(column) || ' '", "' \(SearchText.genreMark) '")
        let genre = "substr(\(column), \(mark) + 3)"
        return "substr(\(column), 1, \(mark) + 2) || CASE WHEN \(genre) = '' THEN '' ELSE '_' || replace(\(genre), ' ', ' _') END"
    }

    /// PostgreSQL: the `tsvector` of the search index's text for the stored `search_text` in
    /// `column` (the GIN index's expression), without the field marks, which no query asks for.
    static func searchVector(_ column: String) -> String {
        "ts_delete(array_to_tsvector(string_to_array(\(searchIndexText(column, .postgres)), ' ')), "
            + "ARRAY['\(SearchText.artistMark)', '\(SearchText.genreMark)'])"
    }

    /// A trigger that keeps SQLite's search index in step with `albums`: its name and its exact
    /// `CREATE TRIGGER` text. v9 creates them; a bulk import drops them with the sort indexes
    /// and rebuilds the search index from the table once (`BulkImport.swift`).
    struct Trigger: Sendable {
        let name: String
        let create: String
    }

    static let searchTriggers: [Trigger] = {
        func indexed(_ row: String) -> String { searchIndexText("\(row).search_text", .sqlite) }
        return [
            Trigger(name: "albums_search_insert", create: """
                CREATE TRIGGER albums_search_insert AFTER INSERT ON albums BEGIN
                    INSERT INTO albums_search (rowid, search_index) VALUES (new.row, \(indexed("new")));
                END;
                """),
            Trigger(name: "albums_search_delete", create: """
                CREATE TRIGGER albums_search_delete AFTER DELETE ON albums BEGIN
                    INSERT INTO albums_search (albums_search, rowid, search_index) VALUES ('delete', old.row, \(indexed("old")));
                END;
                """),
            Trigger(name: "albums_search_update", create: """
                CREATE TRIGGER albums_search_update AFTER UPDATE OF search_text ON albums
                WHEN old.search_text IS NOT new.search_text BEGIN
                    INSERT INTO albums_search (albums_search, rowid, search_index) VALUES ('delete', old.row, \(indexed("old")));
                    INSERT INTO albums_search (rowid, search_index) VALUES (new.row, \(indexed("new")));
                END;
                """),
        ]
    }()

    // MARK: v11

    /// API keys (`access_keys`), one row per key: its public id (`bl_` and 8 characters, or
    /// `token`), `name`, `scopes` (`read`, `write`, `admin`, joined by `,`), `libraries` (ids
    /// joined by `,`; NULL for every library), `expires_at` and `created_at` in milliseconds
    /// (NULL: never expires), and its secret's hash as `access_token` kept it (algorithm,
    /// salt, hash, iterations). The token of earlier versions becomes the admin key `token`
    /// for every library, and `access_token` goes.
    private static let v11: [SchemaStep] = [
        .createTable(TableDefinition("access_keys", [
            Column.text("id").isPrimaryKey,
            Column.text("name").notNullable,
            Column.text("scopes").notNullable,
            Column.text("libraries"),
            Column.integer("expires_at"),
            Column.integer("created_at").notNullable,
            Column.text("algorithm").notNullable,
            Column.blob("salt").notNullable,
            Column.blob("hash").notNullable,
            Column.integer("iterations").notNullable.checking("iterations > 0"),
        ], clustered: true)),
        .statement("""
            INSERT INTO access_keys (id, name, scopes, libraries, expires_at, created_at, algorithm, salt, hash, iterations)
            SELECT 'token', 'token', 'admin', NULL, NULL, updated_at, algorithm, salt, hash, iterations FROM access_token;
            """),
        .dropTable("access_token"),
    ]

    // MARK: v12

    /// The genre sort: its key (`SortText.key` of the genre, as the title's) stored with every
    /// row (`genre_sort`) and `albums_by_genre_sort` over it. The keys are made in Swift: rows
    /// from before have none until a store opening the database fills them in
    /// (`SearchTextBackfill.genreKey`), found through the partial index
    /// `albums_without_genre_sort`, which holds just those rows.
    private static let v12: [SchemaStep] = [
        .addColumn(table: "albums", Column.text("genre_sort")),
        .createIndex(genreSortIndex),
        .createIndex(IndexDefinition(
            name: "albums_without_genre_sort", table: "albums", columns: [.plain("row")], condition: "genre_sort IS NULL")),
    ]
}
