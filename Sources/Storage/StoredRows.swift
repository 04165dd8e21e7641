import Library
import SQLite

/// Domain values read back from rows: the one place that knows which column is which (the
/// column lists are in `SQL.swift`) and what a malformed stored value means (`.corrupt`).
enum StoredRows {
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

    /// Columns: version, kind, album_id, position, recorded_at.
    static func change(from row: Row) throws -> LibraryChange {
        let kindText = try row.string(1)
        guard let kind = LibraryChange.Kind(rawValue: kindText) else {
            throw StorageError(.corrupt, "stored change kind \(kindText) is unknown")
        }
        var id: AlbumID?
        if let text = try row.get(2, as: String?.self) {
            guard let parsed = AlbumID(text) else { throw StorageError(.corrupt, "stored album id \(text) is malformed") }
            id = parsed
        }
        return LibraryChange(
            version: try row.int64(0), kind: kind, id: id, index: try row.get(3, as: Int?.self),
            recordedAt: Milliseconds.date(try row.int64(4)))
    }
}
