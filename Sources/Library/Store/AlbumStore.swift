/// Persistence for album libraries, as transactions over primitive operations.
///
/// The division of labour: the store knows *how* (SQL, position keys, indexes, JSON columns);
/// `LibraryFacade` knows *what is allowed* (index rules, undo, saved-state clamping, versions).
/// The store therefore checks nothing beyond its own integrity, and every rule can be tested
/// with an in-memory store.
///
/// Rules for conformers:
/// - `read` runs `body` on one consistent snapshot; `write` runs `body` in one serialised
///   transaction and commits only if `body` returns. If `body` throws, everything it did is
///   rolled back and the **same error is rethrown unchanged** (the facade relies on this to
///   report its own `LibraryError`s).
/// - The reader and writer passed to `body` are valid only during the call; do not keep them.
/// - A committed `write` is durable before it returns (the server acknowledges after it).
/// - Libraries: `default` always exists. `read`/`write` of a library that does not exist (never
///   created, or deleted) throw `LibraryError.libraryNotFound`. A library id that is deleted and
///   created again continues its version numbers (versions never repeat for an id), so ETags
///   and cursors of the old library never match the new one: it starts one above the last
///   version the deleted library had. `deleteLibrary(.default)` throws `LibraryError.conflict`.
/// - Album ids are unique across all libraries: inserting an id that any library holds fails
///   (at the insert, or for a bulk import in SQLite at the commit, as `LibraryError.conflict`
///   naming the album and its library; either way nothing is committed).
public protocol AlbumStore: Sendable {
    /// Runs `body` on a consistent read snapshot of `library`.
    func read<T>(_ library: LibraryID, _ body: (any AlbumStoreReader) throws -> T) throws -> T

    /// Runs `body` in one write transaction on `library`; a throw rolls everything back.
    func write<T>(_ library: LibraryID, _ body: (any AlbumStoreWriter) throws -> T) throws -> T

    /// `write` for a body that changes a great many rows (an archive import): a store that
    /// commits queued writes together (SQLite's group commit) runs it in a transaction of its
    /// own, where no savepoint has to keep the old content of every page it changes.
    func writeAlone<T>(_ library: LibraryID, _ body: (any AlbumStoreWriter) throws -> T) throws -> T

    /// Runs `body` on one consistent snapshot of several libraries; the readers come in the
    /// order of `libraries` (which has no duplicates).
    func read<T>(_ libraries: [LibraryID], _ body: ([any AlbumStoreReader]) throws -> T) throws -> T

    /// Runs `body` in one write transaction over several libraries (a move between libraries);
    /// the writers come in the order of `libraries` (no duplicates). A throw rolls back all.
    func write<T>(_ libraries: [LibraryID], _ body: ([any AlbumStoreWriter]) throws -> T) throws -> T

    // MARK: - Catalog (each call is its own transaction)

    /// Every library, ordered by id.
    func libraries() throws -> [LibraryRecord]

    /// Creates an empty library. - Throws: `LibraryError.conflict` when the id exists.
    func createLibrary(_ id: LibraryID, name: String) throws -> LibraryRecord

    /// Changes a library's display name. - Throws: `LibraryError.libraryNotFound`.
    func renameLibrary(_ id: LibraryID, name: String) throws -> LibraryRecord

    /// Deletes a library with everything it holds (albums, order, undo stack, saved states,
    /// change feed); views are not touched. With `onlyIfEmpty`, a library that holds albums
    /// when the delete's own transaction looks is left alone: `LibraryError.conflict` (so an
    /// album that arrives after a caller saw the library empty is never deleted with it).
    /// - Throws: `LibraryError.libraryNotFound`, `.conflict`.
    func deleteLibrary(_ id: LibraryID, onlyIfEmpty: Bool) throws

    /// Every view definition, ordered by id.
    func views() throws -> [ViewDefinition]

    /// Stores `view`, replacing the definition with the same id (unconditionally: for imports
    /// and fixtures; `Libraries` changes definitions only with the compare-and-set below).
    func saveView(_ view: ViewDefinition) throws

    /// Compare-and-set of a definition, one transaction, safe against every other instance on
    /// the same database. `previousRevision` nil: creates `view`, false (nothing stored) when a
    /// view with its id exists. Otherwise replaces the definition only while the stored one
    /// still has revision `previousRevision`; false (nothing stored) when it changed or was
    /// deleted meanwhile. Of two concurrent calls from one revision, exactly one returns true.
    func saveView(_ view: ViewDefinition, expecting previousRevision: Int64?) throws -> Bool

    /// Deletes a view definition; false when there was none.
    func deleteView(_ id: ViewID) throws -> Bool

    // MARK: - Several processes on one database

    /// True when other processes (other instances on one PostgreSQL) commit to the same
    /// database. A facade then trusts nothing it remembers: each request reads the versions
    /// it depends on (``versions(of:)``, one small statement), so a request that starts after
    /// any instance acknowledged a write sees that write. Default: false.
    var isShared: Bool { get }

    /// The current version of each library, in the order given (no duplicates), read in one
    /// snapshot. - Throws: `LibraryError.libraryNotFound` for a library that does not exist.
    func versions(of libraries: [LibraryID]) throws -> [Int64]
}

extension AlbumStore {
    /// One library's read: the snapshot of several libraries, with one.
    public func read<T>(_ library: LibraryID, _ body: (any AlbumStoreReader) throws -> T) throws -> T {
        try read([library]) { try body($0[0]) }
    }

    /// One library's write: the transaction over several libraries, with one.
    public func write<T>(_ library: LibraryID, _ body: (any AlbumStoreWriter) throws -> T) throws -> T {
        try write([library]) { try body($0[0]) }
    }

    /// The same as `write` where writes are never batched.
    public func writeAlone<T>(_ library: LibraryID, _ body: (any AlbumStoreWriter) throws -> T) throws -> T {
        try write(library, body)
    }

    /// False: this process is the only writer, so what a facade learnt from its own commits
    /// (the version memo, the view definitions) stays true until its next commit.
    public var isShared: Bool { false }

    /// Reads the versions in one snapshot (stores with a cheaper single statement override it).
    public func versions(of libraries: [LibraryID]) throws -> [Int64] {
        try read(libraries) { readers in try readers.map { try $0.version() } }
    }

    /// Deletes a library with everything it holds, albums included.
    public func deleteLibrary(_ id: LibraryID) throws {
        try deleteLibrary(id, onlyIfEmpty: false)
    }
}

/// The refusal of `deleteLibrary(_:onlyIfEmpty:)` for a library that holds albums.
extension LibraryError {
    public static func libraryNotEmpty(_ id: LibraryID, count: Int) -> LibraryError {
        .conflict(
            "library \"\(id)\" holds \(count) album\(count == 1 ? "" : "s"); "
                + "move them elsewhere first, or delete with ?force=true to delete them with the library")
    }
}
