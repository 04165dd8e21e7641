/// Where a new album goes: the tutorial's `addAlbum:atIndex:` rule.
public enum InsertionIndex {
    /// Resolves a requested insertion index against the current album count.
    ///
    /// Rules: no index appends; `0...count` inserts there (`count` is the end); an index past
    /// the end appends (the tutorial: "if index <= count insert, else append") so a client with
    /// a stale count still succeeds; a negative index is an error — it is never a sensible
    /// position and is most likely a client bug.
    ///
    /// - Throws: `LibraryError.indexOutOfRange` for a negative index.
    public static func resolve(requested: Int?, count: Int) throws(LibraryError) -> Int {
        guard let requested else { return count }
        guard requested >= 0 else { throw .indexOutOfRange(index: requested, count: count) }
        return min(requested, count)
    }
}
