/// Every statement the store runs, in one place, for both engines: PostgreSQL runs this text
/// too (its session rewrites `?N` to `$N`), except the statements that must differ, which are in
/// `SQLDialect` (and the SQLite-only pragmas at the end). Constant text (values are always
/// bound), so each one is prepared once per connection and then reused from the statement cache.
/// Written to mean the same on both: `ON CONFLICT … DO UPDATE` qualifies the target's columns
/// (PostgreSQL finds a bare one ambiguous), a subquery in FROM has an alias.
///
/// Four kinds of SQL live elsewhere, each in one file:
/// - what differs between SQLite and PostgreSQL: `SQLDialect.swift`;
/// - the schema: the migrations, append-only, as tables, columns and indexes both engines'
///   DDL is spelled from, in `SchemaHistory.swift` (`SchemaDefinition.swift` spells them; the
///   sort indexes a bulk import drops and recreates are `Schema.bulkIndexes`);
/// - the server's own records (settings, access, idempotency keys, secrets):
///   `ServerRecordsSQL.swift`;
/// - filtered, sorted pages, whose text depends on which filter conditions are present: built
///   by `PagingQuery` (`PagingSQL.swift`) from fixed fragments, so each shape is still one
///   cached statement.
enum SQL {
    // MARK: Libraries

    /// The row of a name, live or deleted (rows are never removed: see `SchemaHistory` v7).
    static let libraryID = "SELECT id FROM libraries WHERE name = ?1"
    /// The row ?1: live, album count, version, sort articles (what a transaction of the library
    /// would otherwise read one statement at a time).
    static let libraryRowByID = "SELECT deleted = 0, album_count, version, sort_articles FROM libraries WHERE id = ?1"
    static let librarySortArticles = "SELECT sort_articles FROM libraries WHERE id = ?1"
    static let setLibrarySortArticles = "UPDATE libraries SET sort_articles = ?2 WHERE id = ?1"
    /// The next `batch` album rows of library ?1 after row ?2 (in row order): row, artist, artist key.
    /// `+library`: no index on `library` for this (SQLite would read the library's entries of
    /// one and sort them by row for every batch); the rows are read in row order from ?2 on.
    static func artistKeys(batch: Int) -> String {
        "SELECT row, artist, artist_sort FROM albums WHERE +library = ?1 AND row > ?2 ORDER BY row LIMIT \(batch)"
    }
    static let setArtistKey = "UPDATE albums SET artist_sort = ?2 WHERE row = ?1"
    private static let libraryColumns = "name, display_name, album_count, version"
    static let liveLibraries = "SELECT \(libraryColumns) FROM libraries WHERE deleted = 0 ORDER BY name"
    /// Creates a library, or brings a deleted one back one version above where it ended; no
    /// row comes back when a live library has the name.
    static let createLibrary = """
        INSERT INTO libraries (name, display_name) VALUES (?1, ?2)
        ON CONFLICT (name) DO UPDATE SET
            deleted = 0, display_name = excluded.display_name, version = libraries.version + 1, album_count = 0
        WHERE libraries.deleted = 1
        RETURNING id, \(libraryColumns)
        """
    static let renameLibrary = """
        UPDATE libraries SET display_name = ?2 WHERE name = ?1 AND deleted = 0 RETURNING \(libraryColumns)
        """
    static let tombstoneLibrary = "UPDATE libraries SET deleted = 1, album_count = 0 WHERE id = ?1"
    /// Where an album is, whichever library holds it (the global index of v7).
    static let libraryOfAlbum = """
        SELECT l.name FROM albums AS a JOIN libraries AS l ON l.id = a.library WHERE a.album_id = ?1
        """
    static let albumCount = "SELECT album_count FROM libraries WHERE id = ?1"
    static let setAlbumCount = "UPDATE libraries SET album_count = ?2 WHERE id = ?1"
    static let setVersionAndCount = "UPDATE libraries SET version = ?2, album_count = ?3 WHERE id = ?1"

    // MARK: Views (columns: id, name, sources, filter_text, filter_artist, filter_genre,
    // filter_year_from, filter_year_to, revision)

    static let views = """
        SELECT id, name, sources, filter_text, filter_artist, filter_genre, filter_year_from, filter_year_to, revision
        FROM views ORDER BY id
        """
    static let saveView = """
        INSERT INTO views (id, name, sources, filter_text, filter_artist, filter_genre, filter_year_from,
            filter_year_to, revision) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
        ON CONFLICT (id) DO UPDATE SET name = excluded.name, sources = excluded.sources,
            filter_text = excluded.filter_text, filter_artist = excluded.filter_artist,
            filter_genre = excluded.filter_genre, filter_year_from = excluded.filter_year_from,
            filter_year_to = excluded.filter_year_to, revision = excluded.revision
        """
    /// A new view only: nothing happens (no row changed) when the id exists.
    static let createView = """
        INSERT INTO views (id, name, sources, filter_text, filter_artist, filter_genre, filter_year_from,
            filter_year_to, revision) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
        ON CONFLICT (id) DO NOTHING
        """
    /// Compare-and-set: replaces the definition only while its revision is still ?10 (no row
    /// changed when another change, or a delete, came first).
    static let updateView = """
        UPDATE views SET name = ?2, sources = ?3, filter_text = ?4, filter_artist = ?5, filter_genre = ?6,
            filter_year_from = ?7, filter_year_to = ?8, revision = ?9
        WHERE id = ?1 AND revision = ?10
        """
    static let deleteView = "DELETE FROM views WHERE id = ?1"

    // MARK: Buckets (columns: ord, id, size)

    static let bucketsForward = "SELECT ord, id, size FROM buckets WHERE library = ?1 ORDER BY ord"
    static let bucketsBackward = "SELECT ord, id, size FROM buckets WHERE library = ?1 ORDER BY ord DESC"
    static let lastBucket = "SELECT ord, id, size FROM buckets WHERE library = ?1 ORDER BY ord DESC LIMIT 1"
    /// The last bucket and its highest position (one round trip for an append on PostgreSQL).
    static let lastBucketAndPosition = """
        SELECT ord, id, size, (SELECT MAX(pos) FROM albums WHERE bucket = b.id)
        FROM buckets AS b WHERE library = ?1 ORDER BY ord DESC LIMIT 1
        """
    static let bucketBefore =
        "SELECT ord, id, size FROM buckets WHERE library = ?1 AND ord < ?2 ORDER BY ord DESC LIMIT 1"
    static let bucketAfter = "SELECT ord, id, size FROM buckets WHERE library = ?1 AND ord > ?2 ORDER BY ord LIMIT 1"
    static let bucketByID = "SELECT ord, id, size FROM buckets WHERE id = ?1"
    static let insertBucket = "INSERT INTO buckets (library, ord, id, size) VALUES (?1, ?2, ?3, ?4)"
    static let setBucketSize = "UPDATE buckets SET size = ?3 WHERE library = ?1 AND ord = ?2"
    static let deleteBucket = "DELETE FROM buckets WHERE library = ?1 AND ord = ?2"
    static let deleteBuckets = "DELETE FROM buckets WHERE library = ?1"

    // MARK: Positions inside a bucket

    static let positionsAt = "SELECT pos FROM albums WHERE bucket = ?1 ORDER BY pos LIMIT ?2 OFFSET ?3"
    static let lastPosition = "SELECT MAX(pos) FROM albums WHERE bucket = ?1"
    static let firstPosition = "SELECT MIN(pos) FROM albums WHERE bucket = ?1"
    /// Renumbers a bucket to 0, gap, 2·gap, … in the current order, in one statement.
    static let renumberBucket = """
        UPDATE albums SET pos = ranked.n * ?2
        FROM (SELECT row AS r, row_number() OVER (ORDER BY pos) - 1 AS n FROM albums WHERE bucket = ?1) AS ranked
        WHERE albums.row = ranked.r
        """
    /// Re-spaces the keys strictly between ?2 and ?3 to ?2 + step, ?2 + 2·step, … (order unchanged).
    static let respaceRange = """
        UPDATE albums SET pos = ?2 + ranked.n * ?4
        FROM (SELECT row AS r, row_number() OVER (ORDER BY pos) AS n FROM albums
              WHERE bucket = ?1 AND pos > ?2 AND pos < ?3) AS ranked
        WHERE albums.row = ranked.r
        """
    static let moveLowerPart = "UPDATE albums SET bucket = ?2 WHERE bucket = ?1 AND pos < ?3"
    static let moveUpperPart = "UPDATE albums SET bucket = ?2 WHERE bucket = ?1 AND pos >= ?3"
    static let moveBucketShifted = "UPDATE albums SET bucket = ?2, pos = pos + ?3 WHERE bucket = ?1"

    // MARK: Albums

    private static let albumColumns =
        "album_id, title, artist, genre, year, cover_url, created_at, updated_at"
    static let insertAlbum = """
        INSERT INTO albums (library, bucket, pos, \(albumColumns), search_text, title_sort, artist_sort, genre_sort)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
        """
    static let updateAlbum = """
        UPDATE albums SET title = ?3, artist = ?4, genre = ?5, year = ?6, cover_url = ?7,
            created_at = ?8, updated_at = ?9, search_text = ?10, title_sort = ?11, artist_sort = ?12, genre_sort = ?13
        WHERE library = ?1 AND album_id = ?2
        """
    static let albumByID = "SELECT \(albumColumns) FROM albums WHERE library = ?1 AND album_id = ?2"
    static let albumsInBucket =
        "SELECT \(albumColumns) FROM albums WHERE bucket = ?1 ORDER BY pos LIMIT ?2 OFFSET ?3"
    static let allAlbumsInBucket = "SELECT \(albumColumns) FROM albums WHERE bucket = ?1 ORDER BY pos"
    static let placeOfAlbum = """
        SELECT a.row, b.ord, b.id, b.size FROM albums AS a JOIN buckets AS b ON b.id = a.bucket
        WHERE a.library = ?1 AND a.album_id = ?2
        """
    /// Where an album sits for paging: its bucket's `ord`, its bucket, its `pos`.
    static let pagingPlaceOfAlbum = """
        SELECT b.ord, a.bucket, a.pos FROM albums AS a JOIN buckets AS b ON b.id = a.bucket
        WHERE a.library = ?1 AND a.album_id = ?2
        """
    static let deleteAlbumRow = "DELETE FROM albums WHERE row = ?1"
    static let deleteAlbums = "DELETE FROM albums WHERE library = ?1"
    /// Without a WHERE clause SQLite drops the table's pages wholesale (truncate optimisation).
    static let deleteEveryAlbum = "DELETE FROM albums"
    static let otherLibraryHasAlbums =
        "SELECT EXISTS (SELECT 1 FROM libraries WHERE id <> ?1 AND album_count > 0)"

    // MARK: Undo

    static let pushUndo = """
        INSERT INTO undo_commands (library, seq, command)
        VALUES (?1, COALESCE((SELECT MAX(seq) FROM undo_commands WHERE library = ?1), 0) + 1, ?2)
        """
    /// Keeps the newest ?2 commands. A library's sequence numbers have no gaps (a push takes the
    /// highest plus one, an undo removes the highest, a trim the lowest): one index probe, not a
    /// walk over the ?2 kept.
    static let trimUndo = """
        DELETE FROM undo_commands WHERE library = ?1 AND seq <=
            (SELECT MAX(seq) FROM undo_commands WHERE library = ?1) - ?2
        """
    static let undoDepth = "SELECT COUNT(*) FROM undo_commands WHERE library = ?1"
    static let peekUndo = "SELECT seq, command FROM undo_commands WHERE library = ?1 ORDER BY seq DESC LIMIT 1"
    static let deleteUndo = "DELETE FROM undo_commands WHERE library = ?1 AND seq = ?2"
    static let clearUndo = "DELETE FROM undo_commands WHERE library = ?1"

    // MARK: Saved states

    static let state = """
        SELECT client, current_index, album_id, updated_at FROM saved_states WHERE library = ?1 AND client = ?2
        """
    static let states = """
        SELECT client, current_index, album_id, updated_at FROM saved_states WHERE library = ?1 ORDER BY client
        """
    static let saveState = """
        INSERT INTO saved_states (library, client, current_index, album_id, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
        ON CONFLICT (library, client) DO UPDATE SET
            current_index = excluded.current_index, album_id = excluded.album_id, updated_at = excluded.updated_at
        """
    static let deleteStates = "DELETE FROM saved_states WHERE library = ?1"
    static let stateExists = "SELECT 1 FROM saved_states WHERE library = ?1 AND client = ?2"
    static let stateCount = "SELECT count(*) FROM saved_states WHERE library = ?1"
    /// The `?3` least recently saved states other than `?2`'s (never saved first).
    static let evictStates = """
        DELETE FROM saved_states WHERE library = ?1 AND client IN (
            SELECT client FROM saved_states WHERE library = ?1 AND client <> ?2
            ORDER BY updated_at IS NOT NULL, updated_at, client LIMIT ?3)
        """

    // MARK: Consistency

    static let bucketsWithActualSizes = """
        SELECT b.ord, b.id, b.size, (SELECT COUNT(*) FROM albums AS a WHERE a.bucket = b.id),
            (SELECT COUNT(*) FROM albums AS a WHERE a.bucket = b.id AND a.library <> b.library)
        FROM buckets AS b WHERE b.library = ?1 ORDER BY b.ord
        """
    static let albumsOfLibrary = "SELECT COUNT(*) FROM albums WHERE library = ?1"
    static let duplicatePositions = """
        SELECT COUNT(*) FROM (SELECT 1 FROM albums WHERE library = ?1 GROUP BY bucket, pos HAVING COUNT(*) > 1) AS d
        """

    // MARK: Change feed (columns: version, kind, album_id, position, recorded_at, from_position, peer)

    private static let changeColumns = "version, kind, album_id, position, recorded_at, from_position, peer"
    static let changesAfter = """
        SELECT \(changeColumns) FROM library_changes WHERE library = ?1 AND version > ?2 ORDER BY version LIMIT ?3
        """
    static let oldestChange = "SELECT \(changeColumns) FROM library_changes WHERE library = ?1 ORDER BY version LIMIT 1"
    static let oldestChanges =
        "SELECT version, recorded_at FROM library_changes WHERE library = ?1 ORDER BY version LIMIT ?2"
    static let insertChange = """
        INSERT INTO library_changes (library, version, kind, album_id, position, recorded_at, from_position, peer)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
        """
    static let deleteChangesThrough = "DELETE FROM library_changes WHERE library = ?1 AND version <= ?2"
    static let deleteChanges = "DELETE FROM library_changes WHERE library = ?1"

    // MARK: Bulk import

    static let albumsOfOtherLibraries = "SELECT COALESCE(SUM(album_count), 0) FROM libraries WHERE id <> ?1"
    /// An album of library ?1 that another library holds too, with that library's name (after
    /// a bulk import, when the album-id index could not be rebuilt; no index needed).
    static let albumHeldElsewhere = """
        SELECT a.album_id, l.name FROM albums AS a JOIN libraries AS l ON l.id = a.library
        WHERE a.library <> ?1 AND a.album_id IN (SELECT album_id FROM albums WHERE library = ?1) LIMIT 1
        """
    /// An identifier cannot be bound; the names are our own constants (`Schema.bulkIndexes`).
    static func dropIndex(_ name: String) -> String { "DROP INDEX \(name)" }
    static func dropTrigger(_ name: String) -> String { "DROP TRIGGER \(name)" }
    static let albumTriggerNames = "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'albums'"
    /// Rebuilds SQLite's search index (schema v9) from `albums.search_text`.
    static let rebuildSearchIndex = "INSERT INTO albums_search (albums_search) VALUES ('rebuild')"
    /// Merges SQLite's search index into one segment (after a rebuild: see schema v10).
    static let optimizeSearchIndex = "INSERT INTO albums_search (albums_search) VALUES ('optimize')"
    /// Fails (SQLITE_CORRUPT) when the search index differs from `albums.search_text`.
    static let checkSearchIndex = "INSERT INTO albums_search (albums_search, rank) VALUES ('integrity-check', 1)"

    // MARK: Maintenance (pragmas; SQLite only)

    /// A pragma value cannot be bound; `kibibytes` is an integer formatted here.
    static func cacheSize(kibibytes: Int) -> String { "PRAGMA cache_size = -\(kibibytes)" }
    /// After a big import, keep at most 64 MiB of WAL file once it has been checkpointed.
    static let journalSizeLimit = "PRAGMA journal_size_limit = 67108864"
    static let checkpointAndTruncate = "PRAGMA wal_checkpoint(TRUNCATE)"
    /// Copies what it can without blocking anyone; the row is (busy, frames in the WAL, frames copied).
    static let passiveCheckpoint = "PRAGMA wal_checkpoint(PASSIVE)"
    /// Moves whenever another connection commits.
    static let dataVersion = "PRAGMA data_version"
    static let explainQueryPlan = "EXPLAIN QUERY PLAN "
}
