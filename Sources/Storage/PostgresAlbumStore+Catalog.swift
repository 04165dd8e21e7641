import Library
import Postgres

/// The library catalog and the view definitions on PostgreSQL, each call one transaction; every
/// change notifies `bluelibrary_catalog` (a recreated library also `bluelibrary_commits`: its
/// version moved).
extension PostgresAlbumStore {
    public func libraries() throws -> [LibraryRecord] {
        try statement { session in try session.query(SQL.liveLibraries, []) { try StoredRows.library(from: $0) } }
    }

    /// Creates `id`, or brings a deleted `id` back on its old row one version above where it
    /// ended (see `SchemaHistory` v7).
    public func createLibrary(_ id: LibraryID, name: String) throws -> LibraryRecord {
        try writing { session in
            guard let record = try session.firstRow(SQL.createLibrary, [.text(id.rawValue), .text(name)], { row in
                try StoredRows.library(from: row, at: 1)
            }) else {
                throw LibraryError.conflict("a library with id \"\(id)\" exists already; choose another id")
            }
            try session.runLater(PostgresSQL.notifyCatalog, [])
            if record.version > 0 { try session.runLater(PostgresSQL.notifyCommit, [.text(id.rawValue)]) }
            return record
        }
    }

    public func renameLibrary(_ id: LibraryID, name: String) throws -> LibraryRecord {
        try writing { session in
            guard let record = try session.firstRow(SQL.renameLibrary, [.text(id.rawValue), .text(name)], {
                try StoredRows.library(from: $0)
            }) else {
                throw LibraryError.libraryNotFound(id)
            }
            try session.runLater(PostgresSQL.notifyCatalog, [])
            return record
        }
    }

    /// Removes everything `id` holds with a few set-wide statements, under the library's row
    /// lock, and leaves its row as a tombstone keeping the version.
    public func deleteLibrary(_ id: LibraryID, onlyIfEmpty: Bool) throws {
        guard id != .default else { throw LibraryError.conflict("the default library cannot be deleted") }
        try writing { session in
            let row = try Self.lock([id], session)[0]
            let transaction = LibraryTransaction(session, library: row.id, context: engine, soleWriter: true, known: row)
            if onlyIfEmpty, case let count = try transaction.count(), count > 0 {
                throw LibraryError.libraryNotEmpty(id, count: count)
            }
            try transaction.removeLibrary()
            try session.runLater(PostgresSQL.notifyCatalog, [])
        }
    }

    public func views() throws -> [ViewDefinition] {
        try statement { session in try session.query(SQL.views, []) { try StoredRows.view(from: $0) } }
    }

    public func saveView(_ view: ViewDefinition) throws {
        try writing { session in
            try session.run(SQL.saveView, StoredRows.viewBindings(view))
            try session.runLater(PostgresSQL.notifyCatalog, [])
        }
    }

    /// READ COMMITTED: a concurrent INSERT of the same id waits for the first to commit, then
    /// does nothing; a concurrent UPDATE waits for the row, then re-checks the revision on the
    /// committed row, so exactly one of two changes from one revision saves.
    public func saveView(_ view: ViewDefinition, expecting previousRevision: Int64?) throws -> Bool {
        try writing { session in
            if let previousRevision {
                try session.run(SQL.updateView, StoredRows.viewBindings(view) + [.integer(previousRevision)])
            } else {
                try session.run(SQL.createView, StoredRows.viewBindings(view))
            }
            let saved = session.changes > 0
            if saved { try session.runLater(PostgresSQL.notifyCatalog, []) }
            return saved
        }
    }

    public func deleteView(_ id: ViewID) throws -> Bool {
        try writing { session in
            try session.run(SQL.deleteView, [.text(id.rawValue)])
            let deleted = session.changes > 0
            if deleted { try session.runLater(PostgresSQL.notifyCatalog, []) }
            return deleted
        }
    }
}
