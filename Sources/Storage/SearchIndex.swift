import BlueLibraryAPI
import Library

/// How a page of a search uses the search index of schema v8 (`SchemaHistory`).
///
/// The conditions of `PagingQuery` decide what matches, on every path; the index only chooses
/// which rows they are checked on. Walking the library in the page's order finds a page at once
/// when matches are many, and reads every album of the library when they are few; starting
/// from the index reads just the matches, and sorts them. So SQLite first asks the index how
/// many albums hold the query's words, stopping at `sparseLimit + 1` (a read of its doclists,
/// under a millisecond at 1,000,000 albums), and starts from the index when they are at most
/// `sparseLimit`: a sort of at most that many rows. Above it the walk's cost per page is at
/// most about 51 × (albums of the library) / `sparseLimit` rows, as matches are at least that
/// dense, unless most of them are in other libraries (the count is over every library).
/// PostgreSQL's planner makes the choice itself, from the GIN index's statistics.
enum SearchIndex {
    /// Matches up to which a page starts from the index, by default (the SQLite store's
    /// `Configuration.searchIndexLimit`).
    static let sparseLimit = SQLiteAlbumStore.Configuration().searchIndexLimit

    static let countMatches = "SELECT COUNT(*) FROM (SELECT 1 FROM albums_search WHERE albums_search MATCH ?1 LIMIT ?2)"

    /// The path of the statements for `filter` (a walk when it has no search): from the index
    /// when the search has at most `limit` matches.
    static func path<DB: SQLSession>(for filter: AlbumFilter, _ db: DB, limit: Int) throws -> SearchPath {
        guard db.dialect == .sqlite, let text = filter.text, let query = SearchQuery(text) else { return .walk }
        let match = query.ftsMatch
        let matches = try db.value(countMatches, [.text(match), .integer(Int64(min(limit, Int.max - 1)) + 1)], as: Int.self) ?? 0
        return matches <= limit ? .index(match: match) : .walk
    }
}

extension SearchQuery {
    /// The query for SQLite's FTS5 index: every word as a quoted string (a token, whatever it
    /// holds: tokens are letters and digits only, never a quote), the last one a prefix.
    var ftsMatch: String {
        (words.map { "\"\($0)\"" } + ["\"\(prefix)\"*"]).joined(separator: " ")
    }

    /// The query for PostgreSQL's GIN index, as `tsquery` text: every word a quoted lexeme
    /// (`'word'`, taken as it is), the last a prefix (`:*`), all required (`&`).
    var tsquery: String {
        (words.map { "'\($0)'" } + ["'\(prefix)':*"]).joined(separator: " & ")
    }
}
