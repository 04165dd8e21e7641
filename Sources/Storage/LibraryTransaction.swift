import Foundation
import Library
import SQLite

/// The reader/writer handed to one `read` or `write` body: one library, one transaction.
///
/// Keeps a little state for the duration of the transaction — nothing outlives it:
/// - the album count (read once, then maintained; written back in `finish()`);
/// - the *tail*: the last bucket while albums are being appended, whose size is written back
///   only when another operation needs bucket sizes or at `finish()`. A run of appends (an
///   archive import) therefore costs one `INSERT` per album.
final class LibraryTransaction: AlbumStoreWriter {
    let db: Connection
    /// The library's row id; `nil` in a read of a library that was never written.
    let library: Int64?
    let store: SQLiteAlbumStore
    let layout: BucketLayout

    var cachedCount: Int?
    var countIsDirty = false
    var tail: Tail?
    /// Dropped sort indexes of a bulk import (`LibraryTransaction+BulkImport.swift`).
    var bulkImport = BulkImport()

    /// The last bucket while appending, with the last position in it.
    struct Tail {
        var bucket: Bucket
        var lastPosition: Int64
        var sizeIsDirty: Bool
    }

    init(_ db: Connection, library: Int64?, store: SQLiteAlbumStore) {
        self.db = db
        self.library = library
        self.store = store
        self.layout = BucketLayout(target: store.configuration.bucketSize, spacing: store.configuration.keySpacing)
    }

    /// The library row id, for operations that need the library to exist (writes).
    var libraryRow: Int64 {
        get throws {
            guard let library else { throw StorageError(.corrupt, "the library has no row") }
            return library
        }
    }

    /// Writes back what is only cached (tail size, count) and recreates the sort indexes a bulk
    /// import dropped (`LibraryTransaction+BulkImport.swift`). Called by `write` before commit.
    func finish() throws {
        try settleTail()
        if countIsDirty, let library, let cachedCount {
            try db.run(SQL.setAlbumCount, [.integer(library), .integer(Int64(cachedCount))])
            countIsDirty = false
        }
        try restoreSortIndexes()
    }

    /// Writes the tail bucket's size and forgets the tail, so bucket rows are exact.
    func settleTail() throws {
        if let tail, tail.sizeIsDirty, let library {
            try setSize(of: tail.bucket, library: library)
        }
        tail = nil
    }

    func setCount(_ count: Int) {
        cachedCount = count
        countIsDirty = true
    }

    // MARK: - Reading

    func version() throws -> Int64 {
        guard let library else { return 0 }
        return try db.scalar(SQL.version, [.integer(library)], as: Int64.self) ?? 0
    }

    func count() throws -> Int {
        if let cachedCount { return cachedCount }
        guard let library else { return 0 }
        let count = try db.scalar(SQL.albumCount, [.integer(library)], as: Int.self) ?? 0
        cachedCount = count
        return count
    }

    func album(id: AlbumID) throws -> Album? {
        guard let library else { return nil }
        return try db.firstRow(SQL.albumByID, [.integer(library), .text(id.rawValue)], Self.album(from:))
    }

    func index(of id: AlbumID) throws -> Int? {
        guard let library else { return nil }
        try settleTail()
        return try db.scalar(SQL.indexOfAlbum, [.integer(library), .text(id.rawValue)], as: Int.self)
    }

    func album(at index: Int) throws -> Album? {
        guard library != nil, index >= 0, index < (try count()) else { return nil }
        try settleTail()
        let (bucket, offset) = try locate(index)
        return try db.firstRow(
            SQL.albumsInBucket, [.integer(bucket.id), .integer(1), .integer(Int64(offset))], Self.album(from:))
    }

    func albums(offset: Int, limit: Int) throws -> [Album] {
        guard let library, offset >= 0, limit > 0 else { return [] }
        let total = try count()
        guard offset < total else { return [] }
        try settleTail()
        var (bucket, skip) = try locate(offset)
        var result: [Album] = []
        result.reserveCapacity(min(limit, total - offset))
        while true {
            let wanted = limit - result.count
            try db.forEachRow(
                SQL.albumsInBucket, [.integer(bucket.id), .integer(Int64(wanted)), .integer(Int64(skip))]
            ) { row in
                result.append(try Self.album(from: row))
            }
            guard result.count < limit,
                  let next = try db.firstRow(SQL.bucketAfter, [.integer(library), .integer(bucket.ord)], Bucket.init(row:))
            else { break }
            bucket = next
            skip = 0
        }
        return result
    }

    func forEachAlbum(_ body: (Album) throws -> Void) throws {
        guard let library else { return }
        try settleTail()
        try db.forEachRow(SQL.bucketsForward, [.integer(library)]) { bucketRow in
            let bucket = try Bucket(row: bucketRow)
            try db.forEachRow(SQL.allAlbumsInBucket, [.integer(bucket.id)]) { row in
                try body(try Self.album(from: row))
            }
        }
    }

    func undoDepth() throws -> Int {
        guard let library else { return 0 }
        return try db.scalar(SQL.undoDepth, [.integer(library)], as: Int.self) ?? 0
    }

    func peekUndo() throws -> UndoCommand? {
        try newestUndo()?.1
    }

    func state(client: String) throws -> SavedState? {
        guard let library else { return nil }
        return try db.firstRow(SQL.state, [.integer(library), .text(client)], Self.state(from:))
    }

    func states() throws -> [SavedState] {
        guard let library else { return [] }
        return try db.query(SQL.states, [.integer(library)], Self.state(from:))
    }

    func forEachState(_ body: (SavedState) throws -> Void) throws {
        guard let library else { return }
        try db.forEachRow(SQL.states, [.integer(library)]) { row in try body(try Self.state(from: row)) }
    }

    // MARK: - Writing

    func insert(_ album: Album, at index: Int) throws {
        let library = try libraryRow
        let total = try count()
        guard index >= 0, index <= total else {
            throw StorageError(.indexOutOfRange, "insert at \(index) in a library of \(total)")
        }
        if index == total {
            try willAppend(countBefore: total)
            try append(album, library: library)
            return
        }
        try settleTail()
        var (bucket, offset) = try locate(index)
        let position = try position(forOffset: offset, in: &bucket)
        try insertRow(album, library: library, bucket: bucket.id, position: position)
        bucket.size += 1
        try setSize(of: bucket, library: library)
        setCount(total + 1)
        if bucket.size > layout.maximum {
            try split(bucket, library: library)
        }
    }

    func update(_ album: Album) throws {
        let library = try libraryRow
        try db.run(SQL.updateAlbum, [
            .integer(library), .text(album.id.rawValue), .text(album.title), .text(album.artist),
            .text(album.genre), album.year.map { .integer(Int64($0)) } ?? .null,
            album.coverUrl.map { .text($0) } ?? .null,
            .integer(Milliseconds.from(album.createdAt)), .integer(Milliseconds.from(album.updatedAt)),
        ])
        guard db.changes == 1 else {
            throw StorageError(.albumNotFound, "no album \(album.id) to update")
        }
    }

    func delete(id: AlbumID) throws {
        let library = try libraryRow
        try settleTail()
        let total = try count()
        guard let (row, bucket) = try db.firstRow(SQL.placeOfAlbum, [.integer(library), .text(id.rawValue)], {
            (try $0.int64(0), Bucket(ord: try $0.int64(1), id: try $0.int64(2), size: try $0.int(3)))
        }) else {
            throw StorageError(.albumNotFound, "no album \(id) to delete")
        }
        try db.run(SQL.deleteAlbumRow, [.integer(row)])
        setCount(total - 1)
        try removed(from: bucket, library: library)
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
        let library = try libraryRow
        tail = nil
        // Other libraries' counts are exact: this transaction holds the write lock.
        if try db.scalar(SQL.otherLibraryHasAlbums, [.integer(library)], as: Bool.self) == true {
            try db.run(SQL.deleteAlbums, [.integer(library)])
        } else {
            try db.run(SQL.deleteEveryAlbum)
        }
        try db.run(SQL.deleteBuckets, [.integer(library)])
        setCount(0)
        libraryEmptied()
    }

    func deleteAllStates() throws {
        try db.run(SQL.deleteStates, [.integer(try libraryRow)])
    }

    func bumpVersion() throws -> Int64 {
        guard let version = try db.scalar(SQL.bumpVersion, [.integer(try libraryRow)], as: Int64.self) else {
            throw StorageError(.corrupt, "the library has no row")
        }
        return version
    }

    func pushUndo(_ command: UndoCommand, limit: Int) throws {
        let library = try libraryRow
        let json = String(decoding: try JSONEncoder().encode(command), as: UTF8.self)
        try db.run(SQL.pushUndo, [.integer(library), .text(json)])
        try db.run(SQL.trimUndo, [.integer(library), .integer(Int64(max(0, limit)))])
    }

    func popUndo() throws -> UndoCommand? {
        let library = try libraryRow
        guard let (sequence, command) = try newestUndo() else { return nil }
        try db.run(SQL.deleteUndo, [.integer(library), .integer(sequence)])
        return command
    }

    func clearUndo() throws {
        try db.run(SQL.clearUndo, [.integer(try libraryRow)])
    }

    /// Saves `state`, replacing the client's earlier one. A new client past
    /// `maxSavedStates` makes room: the least recently saved states go, a hundredth of the
    /// limit at a time, so the scan that finds them runs once per that many new clients.
    func saveState(_ state: SavedState) throws {
        let library = try libraryRow
        let limit = store.configuration.maxSavedStates
        let isNew = try db.scalar(SQL.stateExists, [.integer(library), .text(state.client)], as: Int.self) == nil
        try db.run(SQL.saveState, [
            .integer(library), .text(state.client), .integer(Int64(state.currentAlbumIndex)),
            state.albumID.map { .text($0.rawValue) } ?? .null,
            state.updatedAt.map { .integer(Milliseconds.from($0)) } ?? .null,
        ])
        guard isNew else { return }
        let count = try db.scalar(SQL.stateCount, [.integer(library)], as: Int.self) ?? 0
        guard count > limit else { return }
        let excess = count - limit + max(0, (limit - 1) / 100)
        try db.run(SQL.evictStates, [.integer(library), .text(state.client), .integer(Int64(excess))])
    }

    // MARK: - Rows

    func insertRow(_ album: Album, library: Int64, bucket: Int64, position: Int64) throws {
        do {
            try db.run(SQL.insertAlbum, [
                .integer(library), .integer(bucket), .integer(position),
                .text(album.id.rawValue), .text(album.title), .text(album.artist), .text(album.genre),
                album.year.map { .integer(Int64($0)) } ?? .null, album.coverUrl.map { .text($0) } ?? .null,
                .integer(Milliseconds.from(album.createdAt)), .integer(Milliseconds.from(album.updatedAt)),
            ])
        } catch let error as SQLiteError where error.isUniqueViolation {
            throw StorageError(.duplicateAlbum, "album \(album.id) is already in the library")
        }
    }

    private func newestUndo() throws -> (Int64, UndoCommand)? {
        guard let library else { return nil }
        guard let (sequence, json) = try db.firstRow(SQL.peekUndo, [.integer(library)], {
            (try $0.int64(0), try $0.string(1))
        }) else { return nil }
        do {
            return (sequence, try JSONDecoder().decode(UndoCommand.self, from: Data(json.utf8)))
        } catch {
            throw StorageError(.corrupt, "undo command \(sequence) cannot be decoded: \(error)")
        }
    }

    /// Columns: album_id, title, artist, genre, year, cover_url, created_at, updated_at.
    static func album(from row: Row) throws -> Album {
        let text = try row.string(0)
        guard let id = AlbumID(text) else { throw StorageError(.corrupt, "stored album id \(text) is malformed") }
        return Album(
            id: id, title: try row.string(1), artist: try row.string(2), genre: try row.string(3),
            year: try row.get(4, as: Int?.self), coverUrl: try row.get(5, as: String?.self),
            createdAt: Milliseconds.date(try row.int64(6)),
            updatedAt: Milliseconds.date(try row.int64(7)))
    }

    /// Columns: client, current_index, album_id, updated_at.
    static func state(from row: Row) throws -> SavedState {
        var albumID: AlbumID?
        if let text = try row.get(2, as: String?.self) {
            guard let id = AlbumID(text) else { throw StorageError(.corrupt, "stored album id \(text) is malformed") }
            albumID = id
        }
        return SavedState(
            client: try row.string(0), currentAlbumIndex: try row.int(1), albumID: albumID,
            updatedAt: try row.get(3, as: Int64?.self).map { Milliseconds.date($0) })
    }
}
