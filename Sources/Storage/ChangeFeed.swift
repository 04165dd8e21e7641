import Foundation
import Library

/// The change feed of one library (table `library_changes`, migration v4), inside one
/// transaction: read after a version, record, prune the oldest.
struct ChangeFeed<DB: SQLSession> {
    let db: DB
    /// The library's row id (a live library: transactions open only on those).
    let library: Int64

    func changes(after version: Int64, limit: Int) throws -> [LibraryChange] {
        guard limit > 0 else { return [] }
        return try db.query(
            SQL.changesAfter, [.integer(library), .integer(version), .integer(Int64(limit))], { try StoredRows.change(from: $0) })
    }

    func oldestRetainedChange() throws -> LibraryChange? {
        return try db.firstRow(SQL.oldestChange, [.integer(library)], { try StoredRows.change(from: $0) })
    }

    /// On PostgreSQL the row goes with the next statement (`runLater`): a version recorded
    /// twice then fails that statement (the commit) with the unique violation itself.
    func record(_ change: LibraryChange, library: Int64) throws {
        do {
            try db.runLater(SQL.insertChange, [
                .integer(library), .integer(change.version), .text(change.kind.rawValue),
                change.id.map { .text($0.rawValue) } ?? .null, change.index.map { .integer(Int64($0)) } ?? .null,
                .integer(Milliseconds.from(change.recordedAt)),
                change.fromIndex.map { .integer(Int64($0)) } ?? .null, change.peer.map { .text($0.rawValue) } ?? .null,
            ])
        } catch where DB.isUniqueViolation(error) {
            throw StorageError(.corrupt, "a change with version \(change.version) is already recorded")
        }
    }

    /// Deletes every change of the library (it is being deleted).
    func deleteAll(library: Int64) throws {
        try db.run(SQL.deleteChanges, [.integer(library)])
    }

    /// Deletes the oldest changes (at most `limit`) up to the first one to keep: only a prefix
    /// goes, so the feed never has a hole.
    func prune(throughVersion maxVersion: Int64, recordedBefore cutoff: Date, limit: Int, library: Int64) throws {
        guard limit > 0 else { return }
        let cutoffMilliseconds = Milliseconds.from(cutoff)
        if let prune = db.dialect.pruneChanges {
            try db.runLater(prune, [.integer(library), .integer(Int64(limit)), .integer(maxVersion), .integer(cutoffMilliseconds)])
            return
        }
        var last: Int64?
        try db.scan(SQL.oldestChanges, [.integer(library), .integer(Int64(limit))]) { row in
            let version = try row.int64(0)
            guard version <= maxVersion, try row.int64(1) < cutoffMilliseconds else { return false }
            last = version
            return true
        }
        if let last {
            try db.run(SQL.deleteChangesThrough, [.integer(library), .integer(last)])
        }
    }
}
