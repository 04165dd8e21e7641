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

    /// Columns: version, kind, album_id, position, recorded_at, from_position, peer.
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
            fromIndex: try row.get(5, as: Int?.self), peer: try row.get(6, as: String?.self).map(LibraryID.init(rawValue:)),
            recordedAt: Milliseconds.date(try row.int64(4)))
    }
}

extension StoredRows {
    /// Columns: name, display_name, album_count, version.
    static func library(from row: Row, at first: Int = 0) throws -> LibraryRecord {
        let id = LibraryID(rawValue: try row.string(first))
        return LibraryRecord(
            id: id, name: try row.get(first + 1, as: String?.self) ?? id.rawValue, albumCount: try row.int(first + 2),
            version: try row.int64(first + 3))
    }

    /// Columns: id, name, sources, filter_text, filter_artist, filter_genre, filter_year_from,
    /// filter_year_to, revision.
    static func view(from row: Row) throws -> ViewDefinition {
        let sources = try row.string(2).split(separator: ",").map { LibraryID(rawValue: String($0)) }
        let filter = AlbumFilter(
            text: try row.get(3, as: String?.self), artist: try row.get(4, as: String?.self),
            genre: try row.get(5, as: String?.self), yearFrom: try row.get(6, as: Int?.self),
            yearTo: try row.get(7, as: Int?.self))
        return ViewDefinition(
            id: ViewID(rawValue: try row.string(0)), name: try row.string(1), sources: sources, filter: filter,
            revision: try row.int64(8))
    }
}
