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
public protocol AlbumStore: Sendable {
    /// Runs `body` on a consistent read snapshot of `library`.
    func read<T>(_ library: LibraryID, _ body: (any AlbumStoreReader) throws -> T) throws -> T

    /// Runs `body` in one write transaction on `library`; a throw rolls everything back.
    func write<T>(_ library: LibraryID, _ body: (any AlbumStoreWriter) throws -> T) throws -> T
}
