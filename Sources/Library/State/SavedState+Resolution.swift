extension SavedState {
    /// The state as it applies to the library now.
    ///
    /// Rules, in order:
    /// 1. If the saved album still exists, the state follows it to its current index (another
    ///    client inserting above it does not change which album is current).
    /// 2. Otherwise the saved index is clamped to `[0, count - 1]`, as the tutorial's
    ///    `reloadScroller` did after a delete: deleting the current album makes its successor
    ///    current, or the new last album when it was last.
    /// 3. An empty library has no current album: index 0, `albumID` nil. (0 rather than -1 so
    ///    clients can always use the index as a starting position.)
    ///
    /// - Parameters:
    ///   - indexOfAlbum: the store's `index(of:)`.
    ///   - albumAt: the store's `album(at:)`.
    func resolved(
        count: Int,
        indexOfAlbum: (AlbumID) throws -> Int?,
        albumAt: (Int) throws -> Album?
    ) rethrows -> SavedState {
        var state = self
        if count == 0 {
            state.currentAlbumIndex = 0
            state.albumID = nil
            return state
        }
        if let albumID, let index = try indexOfAlbum(albumID) {
            state.currentAlbumIndex = index
            return state
        }
        state.currentAlbumIndex = min(max(currentAlbumIndex, 0), count - 1)
        state.albumID = try albumAt(state.currentAlbumIndex)?.id
        return state
    }
}
