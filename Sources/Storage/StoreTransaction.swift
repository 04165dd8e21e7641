import BlueLibraryAPI
import Foundation
import Library
import SQLite

/// The reader/writer a store hands to a `read`/`write` body: the engine's `LibraryTransaction`
/// over one concrete session type, every call forwarded.
///
/// Why not hand out `LibraryTransaction<DB>` itself: the body sees an `any AlbumStoreWriter`,
/// and the protocol witnesses of a generic class are its unspecialised generic code, so every
/// statement would go through the session protocol at run time. The witnesses of these
/// non-generic conformers are the forwarding methods below for one known `DB`, which the
/// compiler specialises: SQLite's engine runs as direct calls on `Connection`, with no
/// protocol dispatch per statement.
protocol StoreTransaction: AlbumStoreWriter {
    associatedtype DB: SQLSession
    var engine: LibraryTransaction<DB> { get }
}

/// SQLite's reader/writer.
struct SQLiteTransaction: StoreTransaction {
    let engine: LibraryTransaction<Connection>
}

/// PostgreSQL's reader/writer.
struct PostgresTransaction: StoreTransaction {
    let engine: LibraryTransaction<PostgresSession>
}

extension StoreTransaction {
    func version() throws -> Int64 { try engine.version() }
    func count() throws -> Int { try engine.count() }
    func sortArticles() throws -> SortArticles { try engine.sortArticles() }
    func album(id: AlbumID) throws -> Album? { try engine.album(id: id) }
    func library(of id: AlbumID) throws -> LibraryID? { try engine.library(of: id) }
    func index(of id: AlbumID) throws -> Int? { try engine.index(of: id) }
    func album(at index: Int) throws -> Album? { try engine.album(at: index) }
    func albums(offset: Int, limit: Int) throws -> [Album] { try engine.albums(offset: offset, limit: limit) }
    func forEachAlbum(_ body: (Album) throws -> Void) throws { try engine.forEachAlbum(body) }

    func albums(matching filter: AlbumFilter, sort: AlbumSort, from anchor: SortAnchor, limit: Int) throws -> [Album]? {
        try engine.albums(matching: filter, sort: sort, from: anchor, limit: limit)
    }

    func count(matching filter: AlbumFilter) throws -> Int { try engine.count(matching: filter) }

    func count(matching filter: AlbumFilter, sort: AlbumSort, in range: SortRange, limit: Int) throws -> Int {
        try engine.count(matching: filter, sort: sort, in: range, limit: limit)
    }

    func albums(matching filter: AlbumFilter, sort: AlbumSort, in range: SortRange, skipping: Int, limit: Int) throws -> [Album] {
        try engine.albums(matching: filter, sort: sort, in: range, skipping: skipping, limit: limit)
    }
    func undoDepth() throws -> Int { try engine.undoDepth() }
    func peekUndo() throws -> UndoCommand? { try engine.peekUndo() }
    func state(client: String) throws -> SavedState? { try engine.state(client: client) }
    func states() throws -> [SavedState] { try engine.states() }
    func forEachState(_ body: (SavedState) throws -> Void) throws { try engine.forEachState(body) }
    func changes(after version: Int64, limit: Int) throws -> [LibraryChange] { try engine.changes(after: version, limit: limit) }
    func oldestRetainedChange() throws -> LibraryChange? { try engine.oldestRetainedChange() }

    func insert(_ album: Album, at index: Int) throws { try engine.insert(album, at: index) }
    func update(_ album: Album) throws { try engine.update(album) }
    func delete(id: AlbumID) throws { try engine.delete(id: id) }
    func move(id: AlbumID, to index: Int) throws { try engine.move(id: id, to: index) }
    func deleteAllAlbums() throws { try engine.deleteAllAlbums() }
    func deleteAllStates() throws { try engine.deleteAllStates() }
    func bumpVersion() throws -> Int64 { try engine.bumpVersion() }
    func setSortArticles(_ articles: SortArticles) throws -> Bool { try engine.setSortArticles(articles) }
    func pushUndo(_ command: UndoCommand, limit: Int) throws { try engine.pushUndo(command, limit: limit) }
    func popUndo() throws -> UndoCommand? { try engine.popUndo() }
    func clearUndo() throws { try engine.clearUndo() }
    func saveState(_ state: SavedState) throws { try engine.saveState(state) }
    func recordChange(_ change: LibraryChange) throws { try engine.recordChange(change) }

    func pruneChanges(throughVersion maxVersion: Int64, recordedBefore cutoff: Date, limit: Int) throws {
        try engine.pruneChanges(throughVersion: maxVersion, recordedBefore: cutoff, limit: limit)
    }
}
