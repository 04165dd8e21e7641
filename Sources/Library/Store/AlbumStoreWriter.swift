import BlueLibraryAPI
import Foundation

/// Write primitives of one library, inside a write transaction.
///
/// The facade calls these only with arguments it has already checked (an index in range, an
/// id that exists, an id that is new), so a conformer may treat a violation as an internal
/// error and throw. None of these bump the version or push undo commands by themselves: the
/// facade does that explicitly, once per mutation.
public protocol AlbumStoreWriter: AlbumStoreReader {
    /// Inserts `album` (whose id is not in the library) so that it ends up at `index`,
    /// shifting later albums up by one. `index` is in `0...count`; `index == count` appends,
    /// and archive import appends every album this way (a fast path is worth having).
    func insert(_ album: Album, at index: Int) throws

    /// Replaces the stored fields of the album with `album.id`; its position does not change.
    func update(_ album: Album) throws

    /// Removes the album with `id`, shifting later albums down by one.
    func delete(id: AlbumID) throws

    /// Moves the album with `id` so that it ends up at `index` (in `0..<count`): as if removed,
    /// then inserted at `index` in the list without it.
    func move(id: AlbumID, to index: Int) throws

    /// Removes every album (not the saved states, version or undo stack).
    func deleteAllAlbums() throws

    /// Removes every saved state.
    func deleteAllStates() throws

    /// Increases the library version by one and returns the new value.
    func bumpVersion() throws -> Int64

    /// Makes `articles` the library's (`sortArticles()`) and remakes the stored artist sort
    /// keys that change with them; returns whether any did.
    func setSortArticles(_ articles: SortArticles) throws -> Bool

    /// Pushes `command` on top of the undo stack, then drops the oldest commands until at
    /// most `limit` remain (`limit` 0 keeps none).
    func pushUndo(_ command: UndoCommand, limit: Int) throws

    /// Removes and returns the newest undo command, or `nil` when the stack is empty.
    func popUndo() throws -> UndoCommand?

    /// Empties the undo stack.
    func clearUndo() throws

    /// Stores `state`, replacing any earlier state of the same client.
    func saveState(_ state: SavedState) throws

    /// Records `change` in the change feed (its version is new and greater than any recorded).
    func recordChange(_ change: LibraryChange) throws

    /// Removes the oldest changes, in version order, while each has a version of at most
    /// `maxVersion` **and** was recorded before `cutoff`, but at most `limit` of them. Stops at
    /// the first change that must be kept, so what remains is always a run of consecutive
    /// versions (a hole would make the feed silently skip a change).
    func pruneChanges(throughVersion maxVersion: Int64, recordedBefore cutoff: Date, limit: Int) throws
}
