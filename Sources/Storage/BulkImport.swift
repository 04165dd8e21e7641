import Library

/// Bulk imports without the sort indexes.
///
/// Appending rows in list order keeps the table and `albums_by_position` append-only, but the
/// five sort indexes (`Schema.sortIndexes`) are keyed by title, artist, genre, year and
/// creation time: every row lands at a random place in each of them, and once they outgrow
/// the page cache each insert costs page reads and writes. Measured at 1M albums: about 25 s
/// of appends with the indexes, 6.5 s without them plus about 4 s for `CREATE INDEX`, which
/// sorts once and writes each index sequentially.
///
/// So when a transaction fills a library from empty (`deleteAllAlbums`, or a library that had
/// no albums, then a run of appends: an archive import) and the appends reach
/// `BulkImport.threshold`, the sort indexes are dropped; `finish()` recreates them from the
/// same statements before the commit. DDL is transactional in SQLite: a transaction that
/// rolls back (a failed import) brings the indexes back with the old rows, and no other
/// connection ever sees the schema without them (readers keep their snapshot; the commit
/// carries both the rows and the rebuilt indexes). The rebuild covers every library's rows,
/// so the indexes are dropped only when this import is large compared with the albums of
/// the other libraries (at least a quarter of them), which keeps the rebuild's cost in
/// proportion to the work it saves.
///
/// The album-id index of v7 (`UNIQUE`, across libraries) is dropped and rebuilt with them: with
/// ids in archive order (random), each insert lands at a random place in it (1M albums, debug
/// build, a busy machine, whole benchmark process: 101 s wall and 7.4 s system time keeping it
/// during the appends, 83 s and 3.7 s dropping and rebuilding it; user time the same). While it is
/// gone, an album id another library holds is not refused at its insert (the v1 index still
/// refuses one within the library); rebuilding the index finds it, and `finish()` then throws
/// `LibraryError.conflict` naming the album and the library that holds it (the transaction
/// rolls back: nothing changed).
///
/// Deleting or emptying a large library is the mirror image (`willDeleteAll`): removing its rows
/// from these five indexes costs a random B-tree step per row and index, and from the search
/// index a delete of every token and prefix through its trigger (replacing a library of 125,000
/// albums by an archive of 6,500, release build: 5.2 s through the triggers), so when the other
/// libraries hold few albums compared with it, the indexes are dropped and rebuilt over what
/// remains (or over what the import appends after the emptying: the appends then find them
/// dropped already).
///
/// The search index (`albums_search`, FTS5; v8, made again by v9 and v10) is kept in step by triggers, one FTS5 write
/// per row; with the indexes, its triggers are dropped too, and `finish()` recreates them and
/// rebuilds the search index from the table in one pass (FTS5's 'rebuild'), then merges it into one
/// segment ('optimize', see schema v10).
///
/// One per write transaction (created by `LibraryTransaction`), told about each append and
/// each emptying of the library; owns what it dropped until `finish()` puts it back.
enum BulkImport {
    /// Appends in one run (after the library was empty) that make dropping the indexes pay.
    static let threshold = 10_000
}

/// The `BulkImport` of one write transaction on a session (SQLite only: on PostgreSQL, whose
/// dialect names no index to drop, it does nothing).
final class BulkImporter<DB: SQLSession> {
    private let db: DB
    private let context: EngineContext
    /// Appends since the library was last empty in this transaction; nil when the library has
    /// not been empty (nothing to gain: the transaction is not filling it from scratch).
    private var appendsSinceEmpty: Int?
    /// Appends needed before the indexes are dropped; known once the threshold is reached.
    private var appendsNeeded: Int?
    /// The indexes this transaction dropped, in `Schema.bulkIndexes` order, to recreate.
    private var droppedIndexes: [Schema.SortIndex] = []
    /// The search index's triggers this transaction dropped (with the indexes), to recreate
    /// before the search index is rebuilt from the table.
    private var droppedTriggers: [SchemaHistory.Trigger] = []
    /// The library being filled or deleted (whose albums a failed album-id index names).
    private var library: Int64?

    init(_ db: DB, context: EngineContext) {
        self.db = db
        self.context = context
    }

    /// The library just became empty (every album deleted): a run of appends may follow.
    func libraryEmptied() {
        appendsSinceEmpty = 0
    }

    /// Called before each append to `library`; `countBefore` is the library's count before
    /// it. Drops the sort indexes once the appends into an emptied library are many enough.
    func willAppend(countBefore: Int, library: Int64) throws {
        guard db.dialect.albumIndexNames != nil else { return }
        if countBefore == 0 { appendsSinceEmpty = appendsSinceEmpty ?? 0 }
        guard let appends = appendsSinceEmpty else { return }
        appendsSinceEmpty = appends + 1
        guard droppedIndexes.isEmpty, appends + 1 >= BulkImport.threshold else { return }
        if appendsNeeded == nil {
            let others = try db.value(SQL.albumsOfOtherLibraries, [.integer(library)], as: Int.self) ?? 0
            appendsNeeded = max(BulkImport.threshold, others / 4)
        }
        guard let needed = appendsNeeded, appends + 1 >= needed else { return }
        self.library = library
        try dropSortIndexes()
    }

    /// Called before deleting the `count` albums of `library` in one statement (the library is
    /// being deleted or emptied): drops the indexes when rebuilding them over the other libraries' albums
    /// costs less than deleting `count` entries from each (the same proportion as for an
    /// import). `finish()` recreates them.
    func willDeleteAll(_ count: Int, library: Int64) throws {
        guard db.dialect.albumIndexNames != nil else { return }
        guard droppedIndexes.isEmpty, count >= BulkImport.threshold else { return }
        let others = try db.value(SQL.albumsOfOtherLibraries, [.integer(library)], as: Int.self) ?? 0
        guard count >= max(BulkImport.threshold, others / 4) else { return }
        self.library = library
        try dropSortIndexes()
    }

    /// Recreates the sort indexes this transaction dropped. Called before the commit;
    /// throwing rolls the whole transaction back (indexes included).
    func finish() throws {
        guard !droppedIndexes.isEmpty else { return }
        for index in droppedIndexes {
            if index.name == Schema.albumIDIndex.name {
                try recreateAlbumIDIndex()
            } else {
                try db.run(index.create, [])
            }
        }
        droppedIndexes = []
        if !droppedTriggers.isEmpty {
            for trigger in droppedTriggers { try db.run(trigger.create, []) }
            droppedTriggers = []
            try db.run(SQL.rebuildSearchIndex, [])
            try db.run(SQL.optimizeSearchIndex, [])
        }
        // A later run of appends in this transaction may drop them again.
        appendsNeeded = nil
    }

    /// Recreates the album-id index; when an album is in two libraries, throws `.conflict`
    /// naming it and the other library.
    private func recreateAlbumIDIndex() throws {
        do {
            try db.run(Schema.albumIDIndex.create, [])
        } catch where DB.isUniqueViolation(error) {
            guard let library, let (id, holder) = try db.firstRow(SQL.albumHeldElsewhere, [.integer(library)], {
                (try $0.string(0), try $0.string(1))
            }) else { throw error }
            throw LibraryError.conflict(
                "album \(id) is in library \"\(holder)\"; album ids are unique across libraries, so move or delete it "
                    + "there first; nothing was changed")
        }
    }

    private func dropSortIndexes() throws {
        // Only those that exist (a maintenance job may have dropped one on purpose): the
        // rebuild then restores exactly the schema found.
        guard let indexNames = db.dialect.albumIndexNames else { return }
        let existing = Set(try db.query(indexNames, []) { try $0.string(0) })
        let dropping = Schema.bulkIndexes.filter { existing.contains($0.name) }
        guard !dropping.isEmpty else { return }
        for index in dropping {
            try db.run(SQL.dropIndex(index.name), [])
        }
        droppedIndexes = dropping
        // The search index's triggers too: it is rebuilt from the table once, in `finish()`,
        // rather than told of each row (and a DELETE on a table with triggers loses SQLite's
        // truncate optimisation).
        let triggers = Set(try db.query(SQL.albumTriggerNames, []) { try $0.string(0) })
        droppedTriggers = SchemaHistory.searchTriggers.filter { triggers.contains($0.name) }
        for trigger in droppedTriggers { try db.run(SQL.dropTrigger(trigger.name), []) }
        context.count(\.sortIndexRebuilds)
    }
}
