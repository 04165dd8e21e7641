import Library
import SQLite

/// The library catalog and the view definitions (migration v7), each call one transaction.
extension SQLiteAlbumStore {
    public func libraries() throws -> [LibraryRecord] {
        try database.read { db in try db.query(SQL.liveLibraries) { try StoredRows.library(from: $0) } }
    }

    /// Creates `id`, or brings a deleted `id` back on its old row one version above where it
    /// ended (see `SchemaHistory` v7).
    public func createLibrary(_ id: LibraryID, name: String) throws -> LibraryRecord {
        let (row, record) = try committing { db in
            guard let created = try db.firstRow(SQL.createLibrary, [.text(id.rawValue), .text(name)], { row in
                (try row.int64(0), try StoredRows.library(from: row, at: 1))
            }) else {
                throw LibraryError.conflict("a library with id \"\(id)\" exists already; choose another id")
            }
            return created
        }
        // Only once committed: a rolled-back insert's row id may go to another name.
        remember(id, row: row)
        return record
    }

    public func renameLibrary(_ id: LibraryID, name: String) throws -> LibraryRecord {
        try committing { db in
            guard let record = try db.firstRow(SQL.renameLibrary, [.text(id.rawValue), .text(name)], {
                try StoredRows.library(from: $0)
            }) else {
                throw LibraryError.libraryNotFound(id)
            }
            return record
        }
    }

    /// Removes everything `id` holds with a few set-wide statements (no per-album work in
    /// Swift) and leaves its row as a tombstone keeping the version.
    public func deleteLibrary(_ id: LibraryID, onlyIfEmpty: Bool) throws {
        guard id != .default else { throw LibraryError.conflict("the default library cannot be deleted") }
        try committing(alone: true) { db in
            let row = try liveRow(id, db)
            let transaction = LibraryTransaction(db, library: row.id, context: engine, soleWriter: true, known: row)
            if onlyIfEmpty, case let count = try transaction.count(), count > 0 {
                throw LibraryError.libraryNotEmpty(id, count: count)
            }
            try transaction.removeLibrary()
        }
    }

    public func views() throws -> [ViewDefinition] {
        try database.read { db in try db.query(SQL.views, [], StoredRows.view(from:)) }
    }

    public func saveView(_ view: ViewDefinition) throws {
        try committing { db in try db.run(SQL.saveView, StoredRows.viewBindings(view)) }
    }

    public func saveView(_ view: ViewDefinition, expecting previousRevision: Int64?) throws -> Bool {
        try committing { db in
            if let previousRevision {
                try db.run(SQL.updateView, StoredRows.viewBindings(view) + [.integer(previousRevision)])
            } else {
                try db.run(SQL.createView, StoredRows.viewBindings(view))
            }
            return db.changes > 0
        }
    }

    public func deleteView(_ id: ViewID) throws -> Bool {
        try committing { db in
            try db.run(SQL.deleteView, [.text(id.rawValue)])
            return db.changes > 0
        }
    }
}
