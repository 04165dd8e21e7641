/// Every statement (and fragment) of the album engine whose text must differ between SQLite
/// and PostgreSQL, in one place. Everything else in `SQL.swift` and `PagingSQL.swift` runs
/// unchanged on both (the PostgreSQL session rewrites `?N` to `$N`).
///
/// Why each differs:
/// - bucket ids: SQLite has one writer, so `MAX(id) + 1` is free of races; on PostgreSQL
///   several instances allocate concurrently (and writers of different libraries do not
///   exclude each other), so ids come from the sequence `bucket_ids` (gaps are fine);
/// - `SUM` of a `bigint` is `numeric` in PostgreSQL: cast back to `bigint`;
/// - an album insert on PostgreSQL says `ON CONFLICT DO NOTHING`: a duplicate album id then
///   changes no row instead of aborting the transaction, so the engine can still name the
///   library holding the album (`LibraryError.conflict`);
/// - the case-insensitive `artist` and `genre` filters: SQLite's `COLLATE NOCASE` on the bound
///   value; PostgreSQL compares ASCII-folded text (the stored `artist_key`, and `translate`);
/// - SQLite-only machinery: the wholesale `DELETE FROM albums` (truncate optimisation) and a
///   bulk import's dropping of the sort indexes (`sqlite_master`); PostgreSQL keeps its indexes
///   and deletes a library's rows by library. The pragmas and `EXPLAIN QUERY PLAN` stay in
///   `SQL.swift`: only the SQLite store runs them.
enum SQLDialect: Sendable, Equatable {
    case sqlite
    case postgres

    /// Statements that find the bucket holding a position in the database (?1 library, ?2 the
    /// position counted from the start, resp. from the end): columns ord, id, size, and the
    /// albums in the buckets passed before it. `nil`: the engine walks the bucket rows itself
    /// (SQLite: in-process, and it stops at the bucket; a server would send the whole table).
    var locateBucket: (forward: String, backward: String)? {
        switch self {
        case .sqlite: nil
        case .postgres: (Self.locateBucket(descending: false), Self.locateBucket(descending: true))
        }
    }

    private static func locateBucket(descending: Bool) -> String {
        let direction = descending ? " DESC" : ""
        return """
            SELECT ord, id, size, passed FROM (
                SELECT ord, id, size, (SUM(size) OVER (ORDER BY ord\(direction) ROWS UNBOUNDED PRECEDING) - size)::bigint AS passed
                FROM buckets WHERE library = ?1) AS w
            WHERE passed + size > ?2 ORDER BY ord\(direction) LIMIT 1
            """
    }

    /// A fresh bucket id (one row, one column).
    var nextBucketID: String {
        switch self {
        case .sqlite: "SELECT COALESCE(MAX(id), 0) + 1 FROM buckets"
        case .postgres: "SELECT nextval('bucket_ids')"
        }
    }

    /// Albums in earlier buckets plus albums before it in its own bucket (?1 library, ?2 album id).
    var indexOfAlbum: String {
        switch self {
        case .sqlite: Self.indexOfAlbum(sum: "COALESCE(SUM(p.size), 0)")
        case .postgres: Self.indexOfAlbum(sum: "COALESCE(SUM(p.size), 0)::bigint")
        }
    }

    private static func indexOfAlbum(sum: String) -> String {
        """
        SELECT (SELECT \(sum) FROM buckets AS p WHERE p.library = ?1 AND p.ord < b.ord)
             + (SELECT COUNT(*) FROM albums AS s WHERE s.bucket = a.bucket AND s.pos < a.pos)
        FROM albums AS a JOIN buckets AS b ON b.id = a.bucket
        WHERE a.library = ?1 AND a.album_id = ?2
        """
    }

    /// Inserts an album row (?1 library, ?2 bucket, ?3 pos, ?4… the album columns).
    var insertAlbum: String {
        switch self {
        case .sqlite: SQL.insertAlbum
        case .postgres: SQL.insertAlbum + " ON CONFLICT DO NOTHING"
        }
    }

    /// Whether appended album rows are queued and sent as one multi-row `INSERT` (PostgreSQL: a
    /// round trip per album would dominate an import; SQLite runs in-process).
    var queuesAppendedAlbums: Bool { self == .postgres }

    /// True when a duplicate album id makes `insertAlbum` change no row (rather than throw).
    var insertSkipsDuplicates: Bool { self == .postgres }

    /// Saves a state and, when that added a client past the limit, evicts the least recently
    /// saved others, in one statement that `runLater` can queue (?1 library, ?2 client, ?3…?5
    /// the state, ?6 the limit, ?7 the extra evicted at once: see `SavedStates.save`); `nil`:
    /// the engine asks and decides in between (SQLite: in-process).
    var saveStateEvicting: String? {
        switch self {
        case .sqlite: nil
        case .postgres:
            // The DELETE does not see the row its CTE inserted (one snapshot): the count is one more.
            """
            WITH saved AS (\(SQL.saveState) RETURNING xmax = 0 AS inserted),
            held AS (SELECT count(*) + 1 AS states FROM saved_states WHERE library = ?1 AND (SELECT inserted FROM saved))
            DELETE FROM saved_states WHERE library = ?1 AND client IN (
                SELECT client FROM saved_states WHERE library = ?1 AND client <> ?2
                ORDER BY updated_at IS NOT NULL, updated_at, client
                LIMIT (SELECT CASE WHEN states > ?6 THEN states - ?6 + ?7 ELSE 0 END FROM held))
            """
        }
    }

    /// Deletes the longest run of the oldest changes (among the first ?2) recorded through
    /// version ?3 and before ?4, in one statement that `runLater` can queue (?1 library); `nil`:
    /// the engine reads them and decides (SQLite: in-process, and it stops at the first to keep).
    ///
    /// The run's last version is one scalar (computed once), and the delete an index range up to
    /// it: with `version IN (…)` the planner may run the window once per row of the feed (seen
    /// on a fresh library, whose statistics said the feed was nearly empty: 2 ms per write and
    /// growing with the feed until the next autoanalyze).
    var pruneChanges: String? {
        switch self {
        case .sqlite: nil
        case .postgres:
            """
            DELETE FROM library_changes WHERE library = ?1 AND version <= (
                SELECT max(version) FROM (
                    SELECT version, bool_and(version <= ?3 AND recorded_at < ?4) OVER (ORDER BY version) AS expired
                    FROM (\(SQL.oldestChanges)) AS oldest) AS marked
                WHERE expired)
            """
        }
    }

    /// Whether emptying the only library with albums may delete every album row wholesale.
    var deletesEveryAlbumWholesale: Bool { self == .sqlite }

    /// The names of the album table's indexes, when a bulk import may drop and rebuild them
    /// (`nil`: it never does).
    var albumIndexNames: String? {
        switch self {
        case .sqlite: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'albums'"
        case .postgres: nil
        }
    }

    // MARK: Paging fragments (`PagingQuery`)

    /// Whether the text `haystack` contains the text `needle` (both expressions), byte for byte.
    func contains(_ haystack: String, _ needle: String) -> String {
        "\(position(haystack, needle)) > 0"
    }

    /// Where the text `needle` first starts in the text `haystack` (1-based; 0: nowhere).
    func position(_ haystack: String, _ needle: String) -> String {
        switch self {
        case .sqlite: "instr(\(haystack), \(needle))"
        case .postgres: "strpos(\(haystack), \(needle))"
        }
    }

    /// `column` (`artist` or `genre`, alias `a`) equals the parameter, ASCII case-insensitively.
    func equalsIgnoringCase(_ column: String, _ parameter: String) -> String {
        switch self {
        case .sqlite: "a.\(column) = \(parameter) COLLATE NOCASE"
        case .postgres:
            column == "artist"
                ? "a.artist_key = \(PostgresSchema.caseFolded(parameter))"
                : "\(PostgresSchema.caseFolded("a.\(column)")) = \(PostgresSchema.caseFolded(parameter))"
        }
    }
}

extension SQLDialect {
    /// `select` with its rows locked for the rest of the transaction where other sessions
    /// could change them meanwhile (PostgreSQL's `FOR UPDATE`); SQLite's one writer needs no lock.
    func lockingRows(_ select: String) -> String {
        switch self {
        case .sqlite: select
        case .postgres: select + " FOR UPDATE"
        }
    }

    /// Deletes a bounded batch of idempotency keys created before ?1; on PostgreSQL it skips
    /// rows another instance is deleting, so a purge never waits behind another.
    var purgeExpiredKeys: String {
        switch self {
        case .sqlite: Self.purgeExpiredKeys(skipping: "")
        case .postgres: Self.purgeExpiredKeys(skipping: " FOR UPDATE SKIP LOCKED")
        }
    }

    private static func purgeExpiredKeys(skipping: String) -> String {
        "DELETE FROM idempotency_keys WHERE key IN (SELECT key FROM idempotency_keys WHERE created_at < ?1 LIMIT 100\(skipping))"
    }

    /// Deletes every failed-attempts record but the ?1 newest windows (ties by client). SQLite
    /// needs a LIMIT before an OFFSET (-1: none); PostgreSQL takes the OFFSET alone.
    var deleteOldestFailuresBeyond: String {
        switch self {
        case .sqlite: Self.deleteOldestFailures(offset: "LIMIT -1 OFFSET ?1")
        case .postgres: Self.deleteOldestFailures(offset: "OFFSET ?1")
        }
    }

    private static func deleteOldestFailures(offset: String) -> String {
        "DELETE FROM access_failures WHERE client IN (SELECT client FROM access_failures ORDER BY window_start DESC, client \(offset))"
    }
}

/// The statements only the PostgreSQL store runs (SQLite needs none of them: one writer, one
/// process): row locks that serialise writers of a library across instances, the versions of
/// several libraries in one statement, and the notifications other instances listen for.
enum PostgresSQL {
    /// The row of a name: id, live, album count, version; locked for the rest of the transaction.
    static let lockLibraryByName =
        "SELECT id, deleted = 0, album_count, version, sort_articles FROM libraries WHERE name = ?1 FOR UPDATE"
    /// The library row ?1: id, live, album count, version, sort articles; locked for the rest of
    /// the transaction.
    static let lockLibrary =
        "SELECT id, deleted = 0, album_count, version, sort_articles FROM libraries WHERE id = ?1 FOR UPDATE"
    /// The row of a name: id, live, album count, version, sort articles.
    static let libraryRow = "SELECT id, deleted = 0, album_count, version, sort_articles FROM libraries WHERE name = ?1"
    /// Tells listening instances that a library (?1, its name) committed a new version.
    static let notifyCommit = "SELECT pg_notify('\(PostgresAlbumStore.commitChannel)', ?1)"
    /// Tells listening instances that the catalog or a view definition changed.
    static let notifyCatalog = "SELECT pg_notify('\(PostgresAlbumStore.catalogChannel)', '')"

    /// Inserts `count` album rows (15 parameters each, in `SQL.insertAlbum`'s order) and returns
    /// the album ids of the rows inserted (a duplicate id is skipped, not an error).
    static let insertAlbumsChunks = [256, 64, 16, 4, 1]

    /// `insertAlbums(count:)` for each of `insertAlbumsChunks`.
    static let insertAlbumsTexts = Dictionary(uniqueKeysWithValues: insertAlbumsChunks.map { ($0, insertAlbums(count: $0)) })

    static func insertAlbums(count: Int) -> String {
        multiRowInsert(
            into: "albums", columns: insertAlbumColumns, rows: count, suffix: " ON CONFLICT DO NOTHING RETURNING album_id")
    }

    /// The columns of `SQL.insertAlbum`, in its parameters' order.
    static let insertAlbumColumns: [String] = {
        let head = SQL.insertAlbum[..<SQL.insertAlbum.range(of: "VALUES")!.lowerBound]
        let list = head[head.index(after: head.firstIndex(of: "(")!)..<head.lastIndex(of: ")")!]
        return list.split(separator: ",").map { String($0.filter { !$0.isWhitespace }) }
    }()

    /// `INSERT INTO table (columns) VALUES ($1, …), (…)` with `rows` rows of `columns.count`
    /// parameters (row-major), then `suffix`: the one builder of multi-row inserts (the
    /// store's appends, `bluelibrary migrate`'s copy).
    static func multiRowInsert(into table: String, columns: [String], rows: Int, suffix: String = "") -> String {
        let width = columns.count
        let values = (0..<rows).map { row in
            "(" + (1...width).map { "$\(row * width + $0)" }.joined(separator: ", ") + ")"
        }
        return "INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES \(values.joined(separator: ", "))" + suffix
    }

    /// name, version, live of the libraries named in ?1, separated by commas (one statement,
    /// one snapshot, one text however many).
    static let versions = "SELECT name, version, deleted = 0 FROM libraries WHERE name = ANY (string_to_array(?1, ','))"
}
