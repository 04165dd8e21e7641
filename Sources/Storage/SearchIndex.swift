import BlueLibraryAPI
import Library

/// How a page of a search uses the search index (schema v8 and v9, `SchemaHistory`).
///
/// The conditions of `PagingQuery` decide what matches, on every path; the index only chooses
/// which rows they are checked on. SQLite first asks the index how many albums hold the
/// query's words, stopping past `Limits.filter` (a read of its doclists: under a millisecond at
/// 1,000,000 albums, with prefixes of 1 to 4 characters indexed), and then, by that count `m`:
/// - `m` ≤ `Limits.sort` (few): the page starts from the index's matches, reads only their
///   rows and sorts them (`SearchPath.index`), at most that many;
/// - `m` ≤ `Limits.filter`: the page walks the order as without a search, but takes the
///   index's matches as a set first and checks each album against it on the order's index
///   entry, reading only the rows in the set (`SearchPath.filter`): a walk of about
///   51 × (albums of the library) / `m` entries, and a set of `m` row ids;
/// - more (many): a plain walk (`SearchPath.walk`), which finds a page's 51 in about
///   51 × (albums of the library) / `m` rows.
/// The count is over every library: a search whose matches are mostly in other libraries walks
/// more of this one than the bounds say.
///
/// PostgreSQL counts the GIN index's matches the same way, up to `Limits.sort`: up to it the
/// statement carries the index's `@@` condition (its planner then reads the matches from the
/// index and sorts them), above it not, so the planner walks the order. Left to itself, with
/// the condition always there, it chose the index and a sort for common words too: 86 ms for the
/// first page of a word 2.7% of 1,000,000 albums have, where the walk takes a few.
enum SearchIndex {
    /// The match counts that choose the path (see the type's description; the defaults are
    /// `SQLiteAlbumStore.Configuration`'s).
    struct Limits: Sendable {
        /// Up to this many matches a page starts from the index and sorts them.
        var sort: Int
        /// Up to this many a page walks the order, filtered by the index's matches.
        var filter: Int

        init(_ limits: (sort: Int, filter: Int) = SQLiteAlbumStore.Configuration().searchIndexLimits) {
            sort = limits.sort
            filter = limits.filter
        }
    }

    static let countMatches = "SELECT COUNT(*) FROM (SELECT 1 FROM albums_search WHERE albums_search MATCH ?1 LIMIT ?2)"
    static let countPostgresMatches = """
        SELECT COUNT(*) FROM (SELECT 1 FROM albums AS a WHERE \(SchemaHistory.searchVector("a.search_text")) @@ ?1::tsquery LIMIT ?2) AS m
        """

    /// The path of the statements for `filter` (a walk when it has no search), by `limits`.
    static func path<DB: SQLSession>(for filter: AlbumFilter, _ db: DB, limits: Limits) throws -> SearchPath {
        guard let text = filter.text, let query = SearchQuery(text) else { return .walk }
        if db.dialect == .postgres {
            guard limits.sort > 0 else { return .walk }
            return try counted(query.tsquery, db, limits: limits).path
        }
        let most = max(limits.sort, limits.filter)
        guard most > 0 else { return .walk }
        // The last word as a whole token first: its matches are some of the prefix's, and
        // cheap to count, where FTS5 merges the lists of every token a prefix of five
        // characters or more begins before it yields one (one to four are indexed).
        if try counted(query.ftsMatchAsWholeWords, db, limits: limits).matches > most { return .walk }
        return try counted(query.ftsMatch, db, limits: limits).path
    }

    /// For a relevance page whose matches are many, the path to the albums of some ranks
    /// (`SearchQuery.rank`): those with every word in the title or artist (`inName`), those
    /// with the prefix as a whole word (`wholePrefix`), or both, chosen by their count in the
    /// search index as `path` chooses; nil when the index has none (those ranks are empty, and
    /// no walk looks for them).
    static func candidatePath<DB: SQLSession>(
        for query: SearchQuery, inName: Bool, wholePrefix: Bool, _ db: DB, limits: Limits
    ) throws -> SearchPath? {
        let match = db.dialect == .postgres
            ? query.tsquery(inName: inName, wholePrefix: wholePrefix) : query.ftsMatch(inName: inName, wholePrefix: wholePrefix)
        let (matches, path) = try counted(match, db, limits: limits)
        return matches == 0 ? nil : path
    }

    /// How many albums the index holds for `match` (SQLite: FTS5 query text; PostgreSQL:
    /// `tsquery` text), counted up to one past the largest limit the engine uses, and the path
    /// that count chooses.
    private static func counted<DB: SQLSession>(_ match: String, _ db: DB, limits: Limits) throws -> (matches: Int, path: SearchPath) {
        let postgres = db.dialect == .postgres
        let most = postgres ? limits.sort : max(limits.sort, limits.filter)
        let bound = SQLValue.integer(Int64(min(max(most, 0), Int.max - 1)) + 1)
        let matches = try db.value(postgres ? countPostgresMatches : countMatches, [.text(match), bound], as: Int.self) ?? 0
        if matches <= limits.sort { return (matches, .index(match: match)) }
        if !postgres, matches <= limits.filter { return (matches, .filter(match: match)) }
        return (matches, .walk)
    }
}

extension SearchQuery {
    /// The query for SQLite's FTS5 index (over `SchemaHistory.searchIndexText`, where genre
    /// tokens carry a `_`): every word (a phrase's too: the index does not know where a token
    /// stands, so the conditions check the order) as a quoted string (a token, whatever it
    /// holds: tokens are letters and digits only, never a quote), the prefix with `*`, each in
    /// either form (`("rock" OR "_rock")`), all required.
    var ftsMatch: String { ftsMatch(inName: false, wholePrefix: false) }

    /// `ftsMatch` with the prefix as a whole token too.
    var ftsMatchAsWholeWords: String { ftsMatch(inName: false, wholePrefix: true) }

    /// `ftsMatch`, or with every word in the title or artist only (the plain form: `inName`),
    /// or the prefix as a whole token (`wholePrefix`).
    func ftsMatch(inName: Bool, wholePrefix: Bool) -> String {
        indexQuery(inName: inName, wholePrefix: wholePrefix, quote: { "\"\($0)\"" }, star: "*", or: "OR", and: "AND")
    }

    /// The query for PostgreSQL's GIN index, as `tsquery` text: every word a quoted lexeme
    /// (`'word'`, taken as it is) in either form (`('rock' | '_rock')`), the prefix with `:*`,
    /// all required (`&`).
    var tsquery: String { tsquery(inName: false, wholePrefix: false) }

    /// `tsquery`, or in the title or artist only (`inName`), or the prefix whole (`wholePrefix`).
    func tsquery(inName: Bool, wholePrefix: Bool) -> String {
        indexQuery(inName: inName, wholePrefix: wholePrefix, quote: { "'\($0)'" }, star: ":*", or: "|", and: "&")
    }

    /// Every word (and the prefix, with `star` unless `wholePrefix`) as `quote` spells a token,
    /// in the plain form only (`inName`) or in either form (`(w OR _w)`), all joined by `and`.
    private func indexQuery(
        inName: Bool, wholePrefix: Bool, quote: (String) -> String, star: String, or: String, and: String
    ) -> String {
        func term(_ word: String, prefix: Bool) -> String {
            let suffix = prefix ? star : ""
            return inName ? quote(word) + suffix : "(\(quote(word))\(suffix) \(or) \(quote("_" + word))\(suffix))"
        }
        let whole = (words + phrases.flatMap { $0 } + (wholePrefix ? prefix.map { [$0] } ?? [] : [])).map { term($0, prefix: false) }
        let start = wholePrefix ? [] : (prefix.map { [term($0, prefix: true)] } ?? [])
        return (whole + start).joined(separator: " \(and) ")
    }
}
