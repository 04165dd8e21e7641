extension LibraryFacade {
    /// The change feed: every change after version `since`, oldest first, at most `limit`.
    ///
    /// Rules: deletions are included (as tombstones: id and the index it had). A `since` older
    /// than the oldest kept change is refused with `.changesExpired`: the client must reload
    /// everything and continue from the version it reloaded. A `since` newer than the library
    /// (a version it never gave out: the client synced against another library or database)
    /// is refused with `.versionAhead`, naming the current version: the client's mistake,
    /// with nothing to reload. `since` equal to the current version gives an empty page with
    /// `next == since`.
    ///
    /// - Throws: `.changesExpired`, `.versionAhead`, `.storage`. A `limit` below 1 is taken as 1.
    public func changes(since: Int64, limit: Int) throws(LibraryError) -> ChangePage {
        let limit = max(1, limit)
        let outcome: Result<ChangePage, LibraryError> = try reading { reader in
            let current = try reader.version()
            // The oldest version a client may hold and still get every later change.
            let floor = (try reader.oldestRetainedChange()?.version ?? current + 1) - 1
            guard since <= current else { return .failure(.versionAhead(since: since, current: current)) }
            guard since >= floor else { return .failure(.changesExpired(since: since, oldest: floor, current: current)) }
            var changes = try reader.changes(after: since, limit: limit + 1)
            let more = changes.count > limit
            if more { changes.removeLast(changes.count - limit) }
            return .success(ChangePage(changes: changes, next: changes.last?.version ?? since, more: more))
        }
        return try outcome.get()
    }
}
