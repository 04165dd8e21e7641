import BlueLibraryAPI
import Library

/// How a page of a search uses the search index (schema v8 to v10, `SchemaHistory`).
///
/// The conditions of `PagingQuery` decide what matches, on every path; the index only chooses
/// which rows they are checked on. SQLite first asks the index which albums hold the query's
/// words, listing them up to one past the larger limit (one read of its lists: about a
/// millisecond at 1,000,000 albums, 3 ms when two words are as common as "nelson the";
/// prefixes of 1 to 8 characters have lists of their own), and then, by their number `m`:
/// - `m` ≤ `Limits.sort` (few): the page starts from the listed matches, reads only their
///   rows and sorts them (`SearchPath.rows`), at most that many;
/// - `m` ≤ `Limits.filter`: the page walks the order as without a search, but takes the
///   listed matches as a set first and checks each album against it on the order's index
///   entry, reading only the rows in the set (`SearchPath.filter`): a walk of about
///   51 × (albums of the library) / `m` entries, and a set of `m` row ids;
/// - more (many): a plain walk (`SearchPath.walk`), which finds a page's 51 in about
///   51 × (albums of the library) / `m` rows.
/// The count is over every library: a search whose matches are mostly in other libraries walks
/// more of this one than the bounds say. A relevance page whose matches are not few reads rank
/// by rank, each rank's albums found the same way (`candidatePath`).
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

    static let listMatches = "SELECT rowid FROM albums_search WHERE albums_search MATCH ?1 LIMIT ?2"
    static let countPostgresMatches = """
        SELECT COUNT(*) FROM (SELECT 1 FROM albums AS a WHERE \(SchemaHistory.searchVector("a.search_text")) @@ ?1::tsquery LIMIT ?2) AS m
        """

    /// The path of the statements for `filter` (a walk when it has no search), by `limits`.
    static func path<DB: SQLSession>(for filter: AlbumFilter, _ db: DB, limits: Limits) throws -> SearchPath {
        guard let text = filter.text, let query = SearchQuery(text) else { return .walk }
        let most = db.dialect == .postgres ? limits.sort : max(limits.sort, limits.filter)
        guard most > 0 else { return .walk }
        return try counted(db.dialect == .postgres ? query.tsquery : query.ftsMatch, db, limits: limits).path
    }

    /// For a relevance page whose matches are many, the path to the albums of a rank as the
    /// index knows them (`match`: `SearchQuery.ftsMatch(rank:)` or `tsquery(rank:)`), chosen
    /// by their count as `path` chooses; nil when the index has none (the rank is empty, and
    /// no walk looks for it).
    static func candidatePath<DB: SQLSession>(_ match: String, _ db: DB, limits: Limits) throws -> SearchPath? {
        let (matches, path) = try counted(match, db, limits: limits)
        return matches == 0 ? nil : path
    }

    /// How many albums the index holds for `match` (SQLite: FTS5 query text; PostgreSQL:
    /// `tsquery` text), counted up to one past the largest limit the engine uses, and the path
    /// that count chooses. SQLite lists the matches as it counts them, and hands the list to
    /// the statements (`SearchPath.rows`, `.filter`): they never ask the index again.
    private static func counted<DB: SQLSession>(_ match: String, _ db: DB, limits: Limits) throws -> (matches: Int, path: SearchPath) {
        func bound(_ limit: Int) -> SQLValue { .integer(Int64(min(max(limit, 0), Int.max - 1)) + 1) }
        if db.dialect == .postgres {
            let matches = try db.value(countPostgresMatches, [.text(match), bound(limits.sort)], as: Int.self) ?? 0
            return (matches, matches <= limits.sort ? .index(match: match) : .walk)
        }
        let rows = try db.query(listMatches, [.text(match), bound(max(limits.sort, limits.filter))], { try $0.int64(0) })
        guard rows.count <= max(limits.sort, limits.filter) else { return (rows.count, .walk) }
        let json = "[" + rows.map(String.init).joined(separator: ",") + "]"
        return (rows.count, rows.count <= limits.sort ? .rows(json: json) : .filter(rows: json))
    }
}

extension SearchQuery {
    /// The query for SQLite's FTS5 index (over `SchemaHistory.searchIndexText`, where genre
    /// tokens carry a `_`): every word as a quoted string (a token, whatever it holds: tokens
    /// are letters and digits only, never a quote), each phrase as a quoted run of them (FTS5's
    /// phrase), the prefix with `*`, each in either form (`("rock" OR "_rock")`), all required.
    ///
    /// The prefix is cut to its first `ftsPrefixLength` characters (the mark counts), the
    /// longest the index keeps lists for (schema v10): FTS5 reads that list as it reads a
    /// word's, where a longer prefix makes it merge the list of every token that begins with
    /// it before the AND with the other words can skip any. The cut finds more albums than
    /// the prefix (`"electron"*`: electronica too); the conditions, which check every row the
    /// index finds, take out the others.
    var ftsMatch: String { indexQuery(rank: nil, Self.fts) }

    /// The longest prefix SQLite's search index keeps a list for (`SchemaHistory`, v10; a
    /// test holds them equal).
    static let ftsPrefixLength = 8

    /// The albums the FTS5 index holds for `rank` of relevance (`rank`'s bits: 4 not every word
    /// in the title or artist, 2 the prefix no whole word, 1 not the words in order): every
    /// album of the rank and few of other ranks (each term reads its token's list: a list as
    /// long as that of "the" takes 3 ms at 1,000,000 albums, so no term is there for nothing):
    /// - the words in order (bit 1 clear, two words or more): the sequence as an FTS5 phrase of
    ///   plain tokens, the last a prefix when it is one (`"dark side"*`), and nothing else (it
    ///   has every word in the title or artist; an album whose prefix is no whole word has the
    ///   phrase too: rank 2 with rank 0);
    /// - else every word and the prefix (as the start of a token) in the plain form (`"rock"`:
    ///   in the title or artist) when bit 4 is clear, in either form when set; and when bit 2
    ///   is clear, the prefix as a whole token in either form too (whatever the field: rank 1
    ///   holds an album with "rock" whole in its genre and "rocket" in its title), in place of
    ///   the prefix when bit 4 is set.
    /// At 1,000,000 albums, "nelson the" (both words common) takes 3 ms for each of these.
    /// A page reads each rank through these (`AlbumPages.rankedPage`).
    func ftsMatch(rank: Int) -> String { indexQuery(rank: rank, Self.fts) }

    /// The query for PostgreSQL's GIN index, as `tsquery` text: every word a quoted lexeme
    /// (`'word'`, taken as it is) in either form (`('rock' | '_rock')`), a phrase's words each
    /// on its own (the index has no positions), the prefix with `:*`, all required (`&`).
    var tsquery: String { indexQuery(rank: nil, Self.tsquerySyntax) }

    /// `ftsMatch(rank:)` for PostgreSQL's index, which has no positions: the words in order
    /// (bit 1) are left to the conditions.
    func tsquery(rank: Int) -> String { indexQuery(rank: rank, Self.tsquerySyntax) }

    /// How an engine's index query spells its parts.
    private struct IndexSyntax: Sendable {
        let quote: @Sendable (String) -> String
        let star: String
        let or: String
        let and: String
        /// The prefix's token as the index keeps lists for it.
        let cut: @Sendable (String) -> String
        /// Tokens one after another, the last a prefix when the flag says so; nil: no positions.
        let phrase: (@Sendable ([String], Bool) -> String)?
    }

    private static let fts = IndexSyntax(
        quote: { "\"\($0)\"" }, star: "*", or: "OR", and: "AND",
        cut: { String($0.unicodeScalars.prefix(ftsPrefixLength)) },
        phrase: { tokens, prefix in "\"\(tokens.joined(separator: " "))\"" + (prefix ? "*" : "") })

    private static let tsquerySyntax = IndexSyntax(
        quote: { "'\($0)'" }, star: ":*", or: "|", and: "&", cut: { $0 }, phrase: nil)

    /// Every word, phrase and the prefix, as `syntax` spells them, all joined by its `and`: in
    /// either form, or for `rank` as `ftsMatch(rank:)` says.
    private func indexQuery(rank: Int?, _ syntax: IndexSyntax) -> String {
        // (In parentheses, as every term below: the one phrase of `q="blue angel"` is then the
        // same text for ranks 0 and 1, asked once.)
        if let rank, rank & 1 == 0, sequence.count > 1, let phrase = syntax.phrase {
            guard let prefix else { return "(\(phrase(sequence, false)))" }
            return "(\(phrase(sequence.dropLast() + [syntax.cut(prefix)], true)))"
        }
        let inName = rank.map(Self.isInName) ?? false
        let whole = rank.map(Self.hasWholePrefix) ?? false
        // A word, or a quoted phrase as a phrase (PostgreSQL: its words each on its own).
        func run(_ tokens: [String]) -> String {
            if tokens.count == 1 { return syntax.quote(tokens[0]) }
            return syntax.phrase.map { $0(tokens, false) } ?? tokens.map(syntax.quote).joined(separator: " \(syntax.and) ")
        }
        func start(_ tokens: [String]) -> String { syntax.quote(syntax.cut(tokens[0])) + syntax.star }
        // `spell` of the plain tokens (in the title or artist), or of either form.
        func form(_ tokens: [String], _ spell: ([String]) -> String) -> String {
            inName ? "(\(spell(tokens)))" : "(\(spell(tokens)) \(syntax.or) \(spell(tokens.map { "_" + $0 })))"
        }
        var terms = (words.map { [$0] } + phrases).map { form($0, run) }
        switch (prefix, inName, whole) {
        case (nil, _, _):
            break
        case let (prefix?, true, true):
            // Whole in the title or artist, or whole in the genre and the start of a word in the
            // title or artist (a whole plain word is such a start: the same albums as asking
            // for both, with one read of the prefix's long list saved).
            terms.append("(\(syntax.quote(prefix)) \(syntax.or) (\(syntax.quote("_" + prefix)) \(syntax.and) \(start([prefix]))))")
        case let (prefix?, false, true):
            terms.append("(\(syntax.quote(prefix)) \(syntax.or) \(syntax.quote("_" + prefix)))")
        case let (prefix?, _, false):
            terms.append(form([prefix], start))
        }
        return terms.joined(separator: " \(syntax.and) ")
    }
}
