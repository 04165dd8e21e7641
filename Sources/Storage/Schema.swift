import SQLite

/// The store's schema, as an append-only list of migrations.
///
/// Rules: a migration that has shipped is never edited, renamed or reordered; changes come as
/// new entries ("v2-...", "v3-...") at the end of `migrator`.
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
/// v5 and v6 add the settings, access and secrets tables (see their statements below).
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
enum Schema {
    static var migrator: Migrator { migrator(first: migrations.count) }

    /// A migrator of the first `count` migrations only (tests build older databases with it).
    static func migrator(first count: Int) -> Migrator {
        var migrator = Migrator()
        for (identifier, statements) in migrations.prefix(count) {
            migrator.register(identifier) { db in try db.execute(statements) }
        }
        return migrator
    }

    /// Every migration, in order: its identifier and its statements. Append only.
    private static let migrations: [(identifier: String, statements: String)] = [
        ("v1-libraries-buckets-albums-undo-states", v1),
        ("v2-idempotency-keys", v2),
        ("v3-sort-indexes", v3),
        ("v4-change-log", v4),
        ("v5-settings-and-access", v5),
        ("v6-secrets", v6),
        ("v7-catalog-global-ids-moves-views", v7),
    ]

    private static let v1 = """
        CREATE TABLE libraries (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            version INTEGER NOT NULL DEFAULT 0,
            album_count INTEGER NOT NULL DEFAULT 0 CHECK (album_count >= 0)
        );
        CREATE TABLE buckets (
            library INTEGER NOT NULL REFERENCES libraries (id),
            ord INTEGER NOT NULL,
            id INTEGER NOT NULL UNIQUE,
            size INTEGER NOT NULL CHECK (size >= 0),
            PRIMARY KEY (library, ord)
        ) WITHOUT ROWID;
        CREATE TABLE albums (
            row INTEGER PRIMARY KEY,
            library INTEGER NOT NULL,
            album_id TEXT NOT NULL,
            bucket INTEGER NOT NULL,
            pos INTEGER NOT NULL,
            title TEXT NOT NULL,
            artist TEXT NOT NULL,
            genre TEXT NOT NULL,
            year INTEGER,
            cover_url TEXT,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            UNIQUE (library, album_id)
        );
        CREATE INDEX albums_by_position ON albums (bucket, pos);
        CREATE TABLE undo_commands (
            library INTEGER NOT NULL REFERENCES libraries (id),
            seq INTEGER NOT NULL,
            command TEXT NOT NULL,
            PRIMARY KEY (library, seq)
        ) WITHOUT ROWID;
        CREATE TABLE saved_states (
            library INTEGER NOT NULL REFERENCES libraries (id),
            client TEXT NOT NULL,
            current_index INTEGER NOT NULL,
            album_id TEXT,
            updated_at INTEGER,
            PRIMARY KEY (library, client)
        ) WITHOUT ROWID;
        """

    private static let v2 = """
        CREATE TABLE idempotency_keys (
            key TEXT PRIMARY KEY,
            fingerprint TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            status INTEGER,
            headers TEXT,
            body BLOB
        );
        CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
        """

    private static let v3 = """
        ALTER TABLE albums ADD COLUMN year_key INTEGER GENERATED ALWAYS AS (IFNULL(year, 0)) VIRTUAL;
        \(sortIndexes.map(\.create).joined(separator: "\n"))
        """

    /// An index a bulk import may drop and recreate (v3's sort indexes, v7's album-id index):
    /// its name and its exact `CREATE INDEX` text.
    struct SortIndex: Sendable {
        let name: String
        let create: String
    }

    /// The sort indexes of v3, in the order v3 creates them: the one place their definitions
    /// live. v3 runs these statements, and a bulk import that drops the indexes for speed
    /// (`BulkImport.swift`) recreates them from the same text, so the schema
    /// (`sqlite_master`) reads exactly as after the migration. Never edit one: v3 has shipped,
    /// so a changed index is a new migration (which must then update this list too).
    static let sortIndexes: [SortIndex] = [
        SortIndex(
            name: "albums_by_title",
            create: "CREATE INDEX albums_by_title ON albums (library, title COLLATE NOCASE, album_id);"),
        SortIndex(
            name: "albums_by_artist",
            create: "CREATE INDEX albums_by_artist ON albums (library, artist COLLATE NOCASE, album_id);"),
        SortIndex(
            name: "albums_by_year",
            create: "CREATE INDEX albums_by_year ON albums (library, year_key, album_id);"),
        SortIndex(
            name: "albums_by_created",
            create: "CREATE INDEX albums_by_created ON albums (library, created_at, album_id);"),
    ]

    /// The global album-id index of v7, the one place its definition lives: v7 runs it, and a
    /// bulk import or a large library deletion that dropped it for speed (`BulkImport.swift`)
    /// recreates it from the same text. Never edit it (v7 has shipped once this is released).
    static let albumIDIndex = SortIndex(
        name: "albums_by_album_id", create: "CREATE UNIQUE INDEX albums_by_album_id ON albums (album_id);")

    /// The indexes a bulk import may drop and rebuild: v3's sort indexes and v7's album-id index.
    static var bulkIndexes: [SortIndex] { sortIndexes + [albumIDIndex] }

    private static let v4 = """
        CREATE TABLE library_changes (
            library INTEGER NOT NULL,
            version INTEGER NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('added', 'updated', 'deleted', 'moved', 'replaced')),
            album_id TEXT,
            position INTEGER,
            recorded_at INTEGER NOT NULL,
            PRIMARY KEY (library, version)
        ) WITHOUT ROWID;
        """

    /// v5: the settings document (one row, JSON, see `LibrarySettings`), the write-protection
    /// token's hash (one row: algorithm, salt, PBKDF2 hash, iterations; never the token) and
    /// failed attempts per client address (`window_start`, `locked_until` in milliseconds).
    private static let v5 = """
        CREATE TABLE settings (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            document TEXT NOT NULL,
            updated_at INTEGER NOT NULL
        );
        CREATE TABLE access_token (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            algorithm TEXT NOT NULL,
            salt BLOB NOT NULL,
            hash BLOB NOT NULL,
            iterations INTEGER NOT NULL CHECK (iterations > 0),
            updated_at INTEGER NOT NULL
        );
        CREATE TABLE access_failures (
            client TEXT PRIMARY KEY,
            attempt_count INTEGER NOT NULL,
            window_start INTEGER NOT NULL,
            locked_until INTEGER
        ) WITHOUT ROWID;
        """

    /// v6: server secrets by name (`cursor`: the HMAC key that seals paging cursors), made
    /// once and kept, so what they sealed stays valid across restarts and for every process
    /// sharing the database.
    private static let v6 = """
        CREATE TABLE secrets (
            name TEXT PRIMARY KEY,
            value BLOB NOT NULL,
            created_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        """

    /// v7: the library catalog (display names, tombstones), globally unique album ids, move
    /// columns in the change feed, composite views (see the layout above).
    private static let v7 = """
        ALTER TABLE libraries ADD COLUMN display_name TEXT;
        ALTER TABLE libraries ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1));
        INSERT INTO libraries (name) VALUES ('default') ON CONFLICT (name) DO NOTHING;
        \(albumIDIndex.create)
        ALTER TABLE library_changes ADD COLUMN from_position INTEGER;
        ALTER TABLE library_changes ADD COLUMN peer TEXT;
        CREATE TABLE views (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            sources TEXT NOT NULL,
            filter_text TEXT,
            filter_artist TEXT,
            filter_genre TEXT,
            filter_year_from INTEGER,
            filter_year_to INTEGER,
            revision INTEGER NOT NULL
        ) WITHOUT ROWID;
        """
}
