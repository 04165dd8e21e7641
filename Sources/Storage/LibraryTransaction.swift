import BlueLibraryAPI
import Foundation
import Library

/// The engine of one library in one transaction, on any `SQLSession`: what a `read` or `write`
/// body's reader/writer does (handed out wrapped in a `StoreTransaction`, which forwards to it).
///
/// A facade of parts with one job each, all made for this transaction and dropped with it:
/// - `SparseOrder`: the list order (positions, buckets, the album count and the append tail);
/// - `AlbumPages`: filtered, sorted pages;
/// - `BulkImport`: drops and rebuilds the sort indexes around a large import (writes only);
/// - `ChangeFeed`, `UndoStack`, `SavedStates`: their tables.
/// What is left here is the album rows themselves (insert, update, read by id) and the
/// library's version.
final class LibraryTransaction<DB: SQLSession> {
    private let db: DB
    /// The library's row id (a live library: transactions open only on those).
    private let library: Int64
    private let context: EngineContext
    private let order: SparseOrder<DB>
    /// Made on the first append or emptying: reads (most transactions) never need it.
    private var bulkImport: BulkImporter<DB>?
    /// Whether `bumpVersion` ran (PostgreSQL then notifies other instances of the commit).
    private(set) var bumpedVersion = false

    // Parts without state of their own: plain values over the connection.
    private var pages: AlbumPages<DB> { AlbumPages(db: db, library: library, order: order) }
    private var changeFeed: ChangeFeed<DB> { ChangeFeed(db: db, library: library) }
    private var undo: UndoStack<DB> { UndoStack(db: db, library: library) }
    private var savedStates: SavedStates<DB> {
        SavedStates(db: db, library: library, limit: context.maxSavedStates)
    }

    /// - Parameter soleWriter: whether this is the only library the transaction writes; only
    ///   then may emptying the library drop every album row wholesale when no other library
    ///   has albums (another open library's count is cached, not yet in its row).
    /// - Parameter known: the library row as the store read it at the start of this transaction
    ///   (under its lock for a write, in the snapshot for a read): its count, version and sort
    ///   articles are then known here without a statement.
    init(_ db: DB, library: Int64, context: EngineContext, soleWriter: Bool, known: KnownLibraryRow) {
        self.db = db
        self.library = library
        self.context = context
        currentVersion = known.version
        currentSortArticles = known.sortArticles
        order = SparseOrder(db, library: library, context: context, soleWriter: soleWriter, knownCount: known.albumCount)
    }

    /// The version, kept up to date by `bumpVersion`.
    private var currentVersion: Int64
    /// The articles of the library's artist keys, kept up to date by `setSortArticles`.
    private var currentSortArticles: SortArticles

    /// Writes back what is only cached (the order's tail size and count) and recreates the sort
    /// indexes a bulk import dropped. Called by `write` before commit.
    func finish() throws {
        try order.finish(version: unwrittenVersion)
        unwrittenVersion = nil
        try bulkImport?.finish()
    }

    /// A version `bumpVersion` decided without writing it (the row is locked since it was read):
    /// `finish` writes it with the album count, one update of the library row instead of two.
    private var unwrittenVersion: Int64?

    // MARK: - Reading

    func version() throws -> Int64 { currentVersion }

    func count() throws -> Int { try order.count() }

    /// The library row as this transaction leaves it, for a body that follows it in the same
    /// database transaction (PostgreSQL's write groups): known here without a statement.
    func rowAfter() throws -> KnownLibraryRow {
        KnownLibraryRow(id: library, albumCount: try count(), version: try version(), sortArticles: try sortArticles())
    }

    /// The articles the library's artist keys are made with (`libraries.sort_articles`).
    func sortArticles() throws -> SortArticles { currentSortArticles }

    /// The stored sort keys of `album` (`title_sort`, `artist_sort`, `genre_sort`), as the last
    /// three values of an album row.
    private func sortKeys(_ album: Album) throws -> [SQLValue] {
        [.text(SortText.key(album.title)), .text(SortText.artistKey(album.artist, ignoring: try sortArticles())), .text(SortText.key(album.genre))]
    }

    func album(id: AlbumID) throws -> Album? {
        return try db.firstRow(SQL.albumByID, [.integer(library), .text(id.rawValue)], { try StoredRows.album(from: $0) })
    }

    func library(of id: AlbumID) throws -> LibraryID? {
        try db.value(SQL.libraryOfAlbum, [.text(id.rawValue)], as: String.self).map(LibraryID.init(rawValue:))
    }

    func index(of id: AlbumID) throws -> Int? { try order.index(of: id) }
    func album(at index: Int) throws -> Album? { try order.album(at: index) }
    func albums(offset: Int, limit: Int) throws -> [Album] { try order.albums(offset: offset, limit: limit) }
    func forEachAlbum(_ body: (Album) throws -> Void) throws { try order.forEachAlbum(body) }

    func albums(matching filter: AlbumFilter, sort: AlbumSort, from anchor: SortAnchor, limit: Int) throws -> [Album]? {
        try pages.albums(matching: filter, sort: sort, from: anchor, limit: limit)
    }

    func count(matching filter: AlbumFilter) throws -> Int { try pages.count(matching: filter) }

    func count(matching filter: AlbumFilter, sort: AlbumSort, in range: SortRange, limit: Int) throws -> Int {
        try pages.count(matching: filter, sort: sort, in: range, limit: limit)
    }

    func albums(matching filter: AlbumFilter, sort: AlbumSort, in range: SortRange, skipping: Int, limit: Int) throws -> [Album] {
        try pages.albums(matching: filter, sort: sort, in: range, skipping: skipping, limit: limit)
    }

    func undoDepth() throws -> Int { try undo.depth() }
    func peekUndo() throws -> UndoCommand? { try undo.peek() }

    func state(client: String) throws -> SavedState? { try savedStates.state(client: client) }
    func states() throws -> [SavedState] { try savedStates.all() }
    func forEachState(_ body: (SavedState) throws -> Void) throws { try savedStates.forEach(body) }

    func changes(after version: Int64, limit: Int) throws -> [LibraryChange] {
        try changeFeed.changes(after: version, limit: limit)
    }

    func oldestRetainedChange() throws -> LibraryChange? { try changeFeed.oldestRetainedChange() }

    // MARK: - Writing

    func insert(_ album: Album, at index: Int) throws {
        let total = try order.count()
        if index == total {
            try madeBulkImport().willAppend(countBefore: total, library: library)
        }
        let appending = index == total
        try order.insert(at: index) { bucket, position in
            try insertRow(album, library: library, bucket: bucket, position: position, appending: appending)
        }
    }

    func update(_ album: Album) throws {
        try db.run(SQL.updateAlbum, [
            .integer(library), .text(album.id.rawValue), .text(album.title), .text(album.artist),
            .text(album.genre), album.year.map { .integer(Int64($0)) } ?? .null,
            album.coverUrl.map { .text($0) } ?? .null,
            .integer(Milliseconds.from(album.createdAt)), .integer(Milliseconds.from(album.updatedAt)),
            .text(SearchText.document(album)),
        ] + (try sortKeys(album)))
        guard db.changes == 1 else {
            throw StorageError(.albumNotFound, "no album \(album.id) to update")
        }
    }

    func delete(id: AlbumID) throws {
        try order.remove(id)
    }

    func move(id: AlbumID, to index: Int) throws {
        let total = try count()
        guard index >= 0, index < total else {
            throw StorageError(.indexOutOfRange, "move to \(index) in a library of \(total)")
        }
        guard let album = try album(id: id) else {
            throw StorageError(.albumNotFound, "no album \(id) to move")
        }
        try delete(id: id)
        try insert(album, at: index)
    }

    func deleteAllAlbums() throws {
        try madeBulkImport().willDeleteAll(try order.count(), library: library)
        try order.removeAll()
        madeBulkImport().libraryEmptied()
    }

    func deleteAllStates() throws {
        try savedStates.deleteAll(library: library)
    }

    /// Rows of the library read at a time while its artist keys are remade.
    private static var sortKeyBatch: Int { 1000 }

    func setSortArticles(_ articles: SortArticles) throws -> Bool {
        guard try sortArticles() != articles else { return false }
        try db.run(SQL.setLibrarySortArticles, [.integer(library), .text(articles.description)])
        currentSortArticles = articles
        var changed = false
        var after: Int64 = 0
        let select = SQL.artistKeys(batch: Self.sortKeyBatch)
        while true {
            let rows = try db.query(select, [.integer(library), .integer(after)]) { row in
                (row: try row.int64(0), artist: try row.string(1), key: try row.optionalString(2))
            }
            for row in rows {
                let key = SortText.artistKey(row.artist, ignoring: articles)
                guard key != row.key else { continue }
                try db.run(SQL.setArtistKey, [.integer(row.row), .text(key)])
                changed = true
            }
            guard rows.count == Self.sortKeyBatch, let last = rows.last else { return changed }
            after = last.row
        }
    }

    func bumpVersion() throws -> Int64 {
        currentVersion += 1
        unwrittenVersion = currentVersion
        bumpedVersion = true
        return currentVersion
    }

    func pushUndo(_ command: UndoCommand, limit: Int) throws {
        try undo.push(command, limit: limit, library: library)
    }

    func popUndo() throws -> UndoCommand? {
        try undo.pop(library: library)
    }

    func clearUndo() throws {
        try undo.clear(library: library)
    }

    func saveState(_ state: SavedState) throws {
        try savedStates.save(state, library: library)
    }

    func recordChange(_ change: LibraryChange) throws {
        try changeFeed.record(change, library: library)
    }

    func pruneChanges(throughVersion maxVersion: Int64, recordedBefore cutoff: Date, limit: Int) throws {
        try changeFeed.prune(throughVersion: maxVersion, recordedBefore: cutoff, limit: limit, library: library)
    }

    /// Deletes everything the library holds (albums, buckets, undo stack, saved states,
    /// changes), each with one statement, and marks its row deleted (the version stays).
    func removeLibrary() throws {
        try madeBulkImport().willDeleteAll(try order.count(), library: library)
        try order.removeAll()
        try bulkImport?.finish()
        try undo.clear(library: library)
        try savedStates.deleteAll(library: library)
        try changeFeed.deleteAll(library: library)
        try db.run(SQL.tombstoneLibrary, [.integer(library)])
    }

    private func madeBulkImport() -> BulkImporter<DB> {
        if let bulkImport { return bulkImport }
        let made = BulkImporter(db, context: context)
        bulkImport = made
        return made
    }

    // MARK: - Rows

    /// Inserts the album row; an append on a session that queues album rows (PostgreSQL: a run
    /// of appends, an archive import) is sent with the next ones as one statement, before the
    /// session's next statement of any other kind (a duplicate id then fails that statement).
    private func insertRow(_ album: Album, library: Int64, bucket: Int64, position: Int64, appending: Bool) throws {
        let values: [SQLValue] = [
            .integer(library), .integer(bucket), .integer(position),
            .text(album.id.rawValue), .text(album.title), .text(album.artist), .text(album.genre),
            album.year.map { .integer(Int64($0)) } ?? .null, album.coverUrl.map { .text($0) } ?? .null,
            .integer(Milliseconds.from(album.createdAt)), .integer(Milliseconds.from(album.updatedAt)),
            .text(SearchText.document(album)),
        ] + (try sortKeys(album))
        if appending, db.dialect.queuesAppendedAlbums {
            try db.queueAlbumRow(values)
            return
        }
        do {
            try db.run(db.dialect.insertAlbum, values)
        } catch where DB.isUniqueViolation(error) {
            throw StorageError(.duplicateAlbum, "album \(album.id) is already in a library")
        }
        if db.dialect.insertSkipsDuplicates, db.changes == 0 {
            // PostgreSQL: the row was skipped, and the transaction can still say where it is
            // (committed by another instance, or earlier in this transaction).
            throw try Self.heldElsewhere(album.id.rawValue, db)
        }
    }

    /// The conflict of inserting album `id` that a library holds already (PostgreSQL, whose
    /// insert skips the row: the transaction can still say where it is, committed by another
    /// instance or earlier in this transaction).
    static func heldElsewhere(_ id: String, _ db: DB) throws -> LibraryError {
        let holder = try db.value(SQL.libraryOfAlbum, [.text(id)], as: String.self) ?? "?"
        return LibraryError.conflict(
            "album \(id) is in library \"\(holder)\"; album ids are unique across libraries, so move or "
                + "delete it there first; nothing was changed")
    }
}

/// A live library's row as a store read it at the start of a transaction (see
/// `LibraryTransaction.init`).
struct KnownLibraryRow {
    var id: Int64
    var albumCount: Int
    var version: Int64
    var sortArticles: SortArticles
}
