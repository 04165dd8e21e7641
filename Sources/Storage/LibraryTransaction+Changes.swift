import Foundation
import Library
import SQLite

/// The change feed's primitives (table `library_changes`, migration v4).
extension LibraryTransaction {
    func changes(after version: Int64, limit: Int) throws -> [LibraryChange] {
        guard let library, limit > 0 else { return [] }
        return try db.query(
            SQL.changesAfter, [.integer(library), .integer(version), .integer(Int64(limit))], Self.change(from:))
    }

    func oldestRetainedChange() throws -> LibraryChange? {
        guard let library else { return nil }
        return try db.firstRow(SQL.oldestChange, [.integer(library)], Self.change(from:))
    }

    func recordChange(_ change: LibraryChange) throws {
        do {
            try db.run(SQL.insertChange, [
                .integer(try libraryRow), .integer(change.version), .text(change.kind.rawValue),
                change.id.map { .text($0.rawValue) } ?? .null, change.index.map { .integer(Int64($0)) } ?? .null,
                .integer(Milliseconds.from(change.recordedAt)),
            ])
        } catch let error as SQLiteError where error.isUniqueViolation {
            throw StorageError(.corrupt, "a change with version \(change.version) is already recorded")
        }
    }

    func pruneChanges(throughVersion maxVersion: Int64, recordedBefore cutoff: Date, limit: Int) throws {
        let library = try libraryRow
        guard limit > 0 else { return }
        let cutoffMilliseconds = Milliseconds.from(cutoff)
        // Walk the oldest `limit` rows and stop at the first one to keep: only a prefix goes.
        var last: Int64?
        var stopped = false
        try db.forEachRow(SQL.oldestChanges, [.integer(library), .integer(Int64(limit))]) { row in
            guard !stopped else { return }
            let version = try row.int64(0)
            let recordedAt = try row.int64(1)
            if version <= maxVersion && recordedAt < cutoffMilliseconds {
                last = version
            } else {
                stopped = true
            }
        }
        if let last {
            try db.run(SQL.deleteChangesThrough, [.integer(library), .integer(last)])
        }
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
