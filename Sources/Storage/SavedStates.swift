import Library

/// The saved states of one library (table `saved_states`, one row per client), inside one
/// transaction, bounded to `maxSavedStates` clients.
struct SavedStates<DB: SQLSession> {
    let db: DB
    /// The library's row id (a live library: transactions open only on those).
    let library: Int64
    /// `Configuration.maxSavedStates`.
    let limit: Int

    func state(client: String) throws -> SavedState? {
        return try db.firstRow(SQL.state, [.integer(library), .text(client)], { try StoredRows.state(from: $0) })
    }

    func all() throws -> [SavedState] {
        return try db.query(SQL.states, [.integer(library)], { try StoredRows.state(from: $0) })
    }

    func forEach(_ body: (SavedState) throws -> Void) throws {
        try db.forEachRow(SQL.states, [.integer(library)]) { row in try body(try StoredRows.state(from: row)) }
    }

    /// Saves `state`, replacing the client's earlier one. A new client past `limit` makes
    /// room: the least recently saved states go, a hundredth of the limit at a time, so the
    /// scan that finds them runs once per that many new clients.
    func save(_ state: SavedState, library: Int64) throws {
        let values: [SQLValue] = [
            .integer(library), .text(state.client), .integer(Int64(state.currentAlbumIndex)),
            state.albumID.map { .text($0.rawValue) } ?? .null,
            state.updatedAt.map { .integer(Milliseconds.from($0)) } ?? .null,
        ]
        let extra = max(0, (limit - 1) / 100)
        if let saveAndEvict = db.dialect.saveStateEvicting {
            try db.runLater(saveAndEvict, values + [.integer(Int64(limit)), .integer(Int64(extra))])
            return
        }
        let isNew = try db.value(SQL.stateExists, [.integer(library), .text(state.client)], as: Int.self) == nil
        try db.run(SQL.saveState, values)
        guard isNew else { return }
        let count = try db.value(SQL.stateCount, [.integer(library)], as: Int.self) ?? 0
        guard count > limit else { return }
        try db.run(SQL.evictStates, [.integer(library), .text(state.client), .integer(Int64(count - limit + extra))])
    }

    func deleteAll(library: Int64) throws {
        try db.run(SQL.deleteStates, [.integer(library)])
    }
}
