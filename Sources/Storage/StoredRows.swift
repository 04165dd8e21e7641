import Library
import ServerRecords

/// Domain values read back from rows: the one place that knows which column is which (the
/// column lists are in `SQL.swift`) and what a malformed stored value means (`.corrupt`).
enum StoredRows {
    /// Columns: album_id, title, artist, genre, year, cover_url, created_at, updated_at.
    static func album(from row: some SQLRow) throws -> Album {
        let text = try row.string(0)
        guard let id = AlbumID(text) else { throw StorageError(.corrupt, "stored album id \(text) is malformed") }
        return Album(
            id: id, title: try row.string(1), artist: try row.string(2), genre: try row.string(3),
            year: try row.optionalInt(4), coverUrl: try row.optionalString(5),
            createdAt: Milliseconds.date(try row.int64(6)),
            updatedAt: Milliseconds.date(try row.int64(7)))
    }

    /// Columns from `first` on: attempt_count, window_start, locked_until (a failed-attempts record).
    static func failedAttempts(from row: some SQLRow, startingAt first: Int = 0) throws -> FailedAttempts {
        FailedAttempts(
            count: try row.int(first), windowStart: Milliseconds.date(try row.int64(first + 1)),
            lockedUntil: row.isNull(first + 2) ? nil : Milliseconds.date(try row.int64(first + 2)))
    }

    /// Columns: id, name, scopes, libraries, expires_at, created_at, algorithm, salt, hash, iterations.
    static func accessKey(from row: some SQLRow) throws -> AccessKey {
        let id = try row.string(0)
        var scopes: [AccessKey.Scope] = []
        for name in try row.string(2).split(separator: ",") {
            guard let scope = AccessKey.Scope(rawValue: String(name)) else {
                throw StorageError(.corrupt, "stored key \(id) has an unknown scope \(name)")
            }
            scopes.append(scope)
        }
        return AccessKey(
            id: id, name: try row.string(1), scopes: scopes,
            libraries: try row.optionalString(3).map { $0.split(separator: ",").map(String.init) },
            expiresAt: try row.optionalInt64(4).map { Milliseconds.date($0) }, createdAt: Milliseconds.date(try row.int64(5)),
            secret: TokenHash(algorithm: try row.string(6), salt: try row.blob(7), hash: try row.blob(8), iterations: try row.int(9)))
    }

    /// Columns: client, current_index, album_id, updated_at.
    static func state(from row: some SQLRow) throws -> SavedState {
        var albumID: AlbumID?
        if let text = try row.optionalString(2) {
            guard let id = AlbumID(text) else { throw StorageError(.corrupt, "stored album id \(text) is malformed") }
            albumID = id
        }
        return SavedState(
            client: try row.string(0), currentAlbumIndex: try row.int(1), albumID: albumID,
            updatedAt: try row.optionalInt64(3).map { Milliseconds.date($0) })
    }

    /// Columns: version, kind, album_id, position, recorded_at, from_position, peer.
    static func change(from row: some SQLRow) throws -> LibraryChange {
        let kindText = try row.string(1)
        guard let kind = LibraryChange.Kind(rawValue: kindText) else {
            throw StorageError(.corrupt, "stored change kind \(kindText) is unknown")
        }
        var id: AlbumID?
        if let text = try row.optionalString(2) {
            guard let parsed = AlbumID(text) else { throw StorageError(.corrupt, "stored album id \(text) is malformed") }
            id = parsed
        }
        return LibraryChange(
            version: try row.int64(0), kind: kind, id: id, index: try row.optionalInt(3),
            fromIndex: try row.optionalInt(5), peer: try row.optionalString(6).map(LibraryID.init(rawValue:)),
            recordedAt: Milliseconds.date(try row.int64(4)))
    }
}

extension StoredRows {
    /// Columns: name, display_name, album_count, version.
    static func library(from row: some SQLRow, at first: Int = 0) throws -> LibraryRecord {
        let id = LibraryID(rawValue: try row.string(first))
        return LibraryRecord(
            id: id, name: try row.optionalString(first + 1) ?? id.rawValue, albumCount: try row.int(first + 2),
            version: try row.int64(first + 3))
    }

    /// Columns: id, name, sources, filter_text, filter_artist, filter_genre, filter_year_from,
    /// filter_year_to, revision.
    static func view(from row: some SQLRow) throws -> ViewDefinition {
        let sources = try row.string(2).split(separator: ",").map { LibraryID(rawValue: String($0)) }
        let filter = AlbumFilter(
            text: try row.optionalString(3), artist: try row.optionalString(4),
            genre: try row.optionalString(5), yearFrom: try row.optionalInt(6),
            yearTo: try row.optionalInt(7))
        return ViewDefinition(
            id: ViewID(rawValue: try row.string(0)), name: try row.string(1), sources: sources, filter: filter,
            revision: try row.int64(8))
    }

    /// `view` bound to ?1...?9 in the column order of ``view(from:)`` (`SQL.saveView`,
    /// `createView`, `updateView`).
    static func viewBindings(_ view: ViewDefinition) -> [SQLValue] {
        let filter = view.filter
        return [
            .text(view.id.rawValue), .text(view.name), .text(view.sources.map(\.rawValue).joined(separator: ",")),
            filter.text.map { .text($0) } ?? .null, filter.artist.map { .text($0) } ?? .null,
            filter.genre.map { .text($0) } ?? .null, filter.yearFrom.map { .integer(Int64($0)) } ?? .null,
            filter.yearTo.map { .integer(Int64($0)) } ?? .null, .integer(view.revision),
        ]
    }
}
