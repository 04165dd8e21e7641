import BlueLibraryAPI

/// Read primitives of one library, inside a transaction. Indexes are 0-based positions in
/// the library's order.
///
/// Performance contract (libraries of 1M albums): `count`, `album(id:)`, `index(of:)`,
/// `album(at:)` and `albums(offset:limit:)` must not scan the whole library;
/// `forEachAlbum` must stream rather than load everything.
public protocol AlbumStoreReader {
    /// The library version: 0 for a library never written, then increased by `bumpVersion`.
    func version() throws -> Int64

    /// The number of albums.
    func count() throws -> Int

    /// The album with `id`, or `nil`.
    func album(id: AlbumID) throws -> Album?

    /// The library that holds the album with `id` (this one or any other), or `nil`.
    func library(of id: AlbumID) throws -> LibraryID?

    /// The position of the album with `id`, or `nil` when there is none.
    func index(of id: AlbumID) throws -> Int?

    /// The album at position `index`, or `nil` when `index` is outside `0..<count`.
    func album(at index: Int) throws -> Album?

    /// Up to `limit` albums starting at position `offset`, in order (empty past the end).
    func albums(offset: Int, limit: Int) throws -> [Album]

    /// Calls `body` with every album in order, without holding them all in memory.
    /// An error thrown by `body` stops the iteration and is rethrown unchanged.
    func forEachAlbum(_ body: (Album) throws -> Void) throws

    /// Up to `limit` albums that match `filter`, in `sort` order, starting at `anchor`.
    ///
    /// Rules: value sorts compare the sort keys of titles, artists and genres (`SortText`, the
    /// artist's with ``sortArticles()``) as UTF-8 bytes, years with a missing year as 0,
    /// creation times in milliseconds, and break ties by album id in the same direction,
    /// exactly as `AlbumFilter.matches` and `SortValue.of` describe. Returns
    /// nil only for `.afterAlbum` when that album no longer exists.
    ///
    /// Performance contract: cost grows with `limit` (and with how many albums the filter
    /// skips), not with how deep the anchor is — except `.offset`, which may walk.
    func albums(matching filter: AlbumFilter, sort: AlbumSort, from anchor: SortAnchor, limit: Int) throws -> [Album]?

    /// The articles an artist sort ignores in this library, as its stored keys were made
    /// (`SortArticles`): read in the same snapshot as the keys.
    func sortArticles() throws -> SortArticles

    /// The number of albums that match `filter` (O(1) for the empty filter).
    func count(matching filter: AlbumFilter) throws -> Int

    /// The number of albums that match `filter` and lie in `range` of the `sort` order (a value
    /// sort, ordered as ``albums(matching:sort:from:limit:)`` orders it), counting at most
    /// `limit`: `min(limit, matching albums in range)`.
    ///
    /// Performance contract: cost grows with the result (at most `limit`) and with how many
    /// albums the filter skips, never with the range's depth (an index seek, then a count);
    /// O(1) for the empty filter over the whole order.
    func count(matching filter: AlbumFilter, sort: AlbumSort, in range: SortRange, limit: Int) throws -> Int

    /// Up to `limit` albums that match `filter` and lie in `range` of the `sort` order (a value
    /// sort), skipping the first `skipping` of them.
    ///
    /// Performance contract: cost grows with `skipping + limit` (and with how many albums the
    /// filter skips), never with the range's depth; the skipped albums are never decoded.
    func albums(matching filter: AlbumFilter, sort: AlbumSort, in range: SortRange, skipping: Int, limit: Int) throws -> [Album]

    /// The number of commands on the undo stack.
    func undoDepth() throws -> Int

    /// The newest undo command, without removing it.
    func peekUndo() throws -> UndoCommand?

    /// The saved state of `client` exactly as stored (not clamped), or `nil`.
    func state(client: String) throws -> SavedState?

    /// Every saved state as stored, ordered by client name.
    func states() throws -> [SavedState]

    /// Calls `body` with every saved state, ordered by client name, without holding them all
    /// in memory. An error thrown by `body` stops the iteration and is rethrown unchanged.
    func forEachState(_ body: (SavedState) throws -> Void) throws

    /// Up to `limit` recorded changes with a version greater than `version`, oldest first.
    func changes(after version: Int64, limit: Int) throws -> [LibraryChange]

    /// The oldest change still kept, or `nil` when none is.
    func oldestRetainedChange() throws -> LibraryChange?
}

extension AlbumStoreReader {
    /// Reads ``states()`` and walks it: stores that can iterate rows should do better.
    public func forEachState(_ body: (SavedState) throws -> Void) throws {
        for state in try states() { try body(state) }
    }
}
