import BlueLibraryAPI
import Library

/// How a statement finds the albums of a search (`q`) (`SearchIndex` decides).
enum SearchPath: Sendable, Equatable {
    /// Reads the library's albums in the statement's order and checks each: the plan for a
    /// search without `q`, and for one whose matches are many (a page's worth come soon).
    case walk
    /// SQLite: walks the order, each album checked first against the search index's matches
    /// (their row ids as listed when the path was chosen, a JSON array read with `json_each`)
    /// taken as a set, on the order's index entry: only the rows in the set are read.
    case filter(rows: String)
    /// SQLite: starts from the search index's matches as listed (row ids, a JSON array), reads
    /// only their rows and sorts them: for a search whose matches are few, wherever they lie in
    /// the order. The statement does not ask the index again (1.7 ms less for a thousand
    /// matches at 1,000,000 albums).
    case rows(json: String)
    /// PostgreSQL: the GIN index's condition (`match`: its `tsquery`), for a search whose
    /// matches are few; the planner reads them from the index and sorts them.
    case index(match: String)

    /// Whether the matches are read from the index and sorted (few of them).
    var isIndex: Bool {
        switch self {
        case .index, .rows: true
        case .walk, .filter: false
        }
    }

    /// The path of a statement that reads every match whatever the order (a count; a
    /// relevance page, which ranks them all): from the index whenever it is used at all, nil
    /// for a walk (too many matches to read them all).
    var everyMatch: SearchPath? {
        switch self {
        case .walk: nil
        case let .filter(rows): .rows(json: rows)
        case .index, .rows: self
        }
    }
}

/// The text and bindings of one paging statement, parameters numbered in the order they are
/// added (so the text is the same for every query of one shape).
struct PagingQuery {
    /// Which SQL the text is written in (case-insensitive sorts and filters differ).
    let dialect: SQLDialect
    private(set) var bindings: [SQLValue] = []

    init(_ dialect: SQLDialect) {
        self.dialect = dialect
    }

    /// The albums a statement reads from (alias `a`), and the condition a path through the
    /// search index adds to its WHERE clause: for `.filter`, membership in the index's matches
    /// (SQLite takes them as a set once and tests each row id from the order's index); for
    /// `.rows`, the matches first, each joined to its row (`CROSS JOIN` keeps SQLite's planner
    /// in that order; it would otherwise walk the order and test each row against the set);
    /// for `.index`, PostgreSQL's index condition.
    mutating func albums(_ search: SearchPath) -> (source: String, match: String) {
        switch search {
        case .walk:
            ("albums AS a", "")
        case let .index(match):
            // (`SearchIndex` makes this path on PostgreSQL only, the two below on SQLite only.)
            ("albums AS a", " AND \(SchemaHistory.searchVector("a.search_text")) @@ \(parameter(.text(match)))::tsquery")
        case let .filter(rows):
            ("albums AS a", " AND a.row IN (SELECT value FROM json_each(\(parameter(.text(rows)))))")
        case let .rows(json):
            ("json_each(\(parameter(.text(json)))) AS m CROSS JOIN albums AS a ON a.row = m.value", "")
        }
    }

    /// Album columns in the order `StoredRows.album(from:)` reads them (alias `a`).
    static let columns = "a.album_id, a.title, a.artist, a.genre, a.year, a.cover_url, a.created_at, a.updated_at"

    /// Binds `value` and returns its placeholder.
    mutating func parameter(_ value: SQLValue) -> String {
        bindings.append(value)
        return "?\(bindings.count)"
    }

    /// ` AND …` for each condition of `filter` (empty for the empty filter), on alias `a`.
    mutating func conditions(_ filter: AlbumFilter) -> String {
        var sql = ""
        if let text = filter.text, !text.isEmpty {
            sql += search(SearchQuery(text))
        }
        if let artist = filter.artist { sql += " AND " + dialect.equalsIgnoringCase("artist", parameter(.text(artist))) }
        if let genre = filter.genre { sql += " AND " + dialect.equalsIgnoringCase("genre", parameter(.text(genre))) }
        if let yearFrom = filter.yearFrom { sql += " AND a.year >= \(parameter(.integer(Int64(yearFrom))))" }
        if let yearTo = filter.yearTo { sql += " AND a.year <= \(parameter(.integer(Int64(yearTo))))" }
        return sql
    }

    /// ` AND …` for a search (`SearchQuery`'s rule) over the stored `search_text` (the folded
    /// tokens, one space apart): each word as a whole token and each phrase as whole tokens in
    /// a row (found by position: PostgreSQL's planner then guesses such a condition true for a
    /// third of the rows, where a LIKE would make it guess a handful and sort the whole match
    /// rather than walk the order), the prefix as a token's start (after a space). Nothing matches a query with no word. These conditions decide what
    /// matches on every path; the search index only narrows the rows they are checked on
    /// (`SearchPath`).
    private mutating func search(_ query: SearchQuery?) -> String {
        guard let query else { return " AND 0 = 1" }
        var sql = ""
        // A word, or a phrase's words one space apart, between spaces: whole tokens in order.
        for words in query.words.map({ [$0] }) + query.phrases {
            let needle = " " + words.joined(separator: " ") + " "
            sql += " AND " + dialect.contains("(' ' || a.search_text || ' ')", parameter(.text(needle)))
        }
        // The prefix after a space: the start of a token. (Not `LIKE '% prefix%'`: PostgreSQL's
        // planner guesses a handful of rows for it and sorted the whole match of a common word,
        // 160 ms at 1M albums where the walk takes 0.7 ms.)
        if let prefix = query.prefix {
            sql += " AND " + dialect.contains("(' ' || a.search_text)", parameter(.text(" " + prefix)))
        }
        return sql
    }

    /// The rank of a matching album in `query` (`SearchQuery.rank`), as an expression over the
    /// stored `search_text`; 0 without a query (as an expression: a bare `0` in ORDER BY would
    /// name a column). A text is in the title or artist when it first occurs before
    /// `SearchText.genreMark` (always there, after the artist mark, and in no token: a word,
    /// the prefix or the phrase is found before it exactly when the title or artist has it).
    /// Positions, not the title and artist cut out: no text is made for each comparison
    /// (thousands of rows are ranked for some pages).
    mutating func rank(_ query: SearchQuery?) -> String {
        guard let query else { return "CAST(0 AS INTEGER)" }
        let document = "(' ' || a.search_text || ' ')"
        let genre = dialect.position(document, "' \(SearchText.genreMark) '")
        // (Found at all, and first before the mark: the phrase is checked on albums without it.)
        func inName(_ text: String) -> String { "\(dialect.position(document, parameter(.text(text)))) BETWEEN 1 AND \(genre)" }
        var name = (query.words.map { [$0] } + query.phrases).map { inName(" " + $0.joined(separator: " ") + " ") }
        if let prefix = query.prefix { name.append(inName(" " + prefix)) }
        var terms = ["CASE WHEN \(name.joined(separator: " AND ")) THEN 0 ELSE 4 END"]
        if let prefix = query.prefix {
            terms.append("CASE WHEN \(dialect.contains(document, parameter(.text(" \(prefix) ")))) THEN 0 ELSE 2 END")
        }
        let phrase = " " + query.sequence.joined(separator: " ") + (query.prefix == nil ? " " : "")
        terms.append("CASE WHEN \(inName(phrase)) THEN 0 ELSE 1 END")
        return "(" + terms.joined(separator: " + ") + ")"
    }
}

// MARK: - Page statements

extension PagingQuery {
    /// Where an album sits in the order: its bucket's `ord`, the bucket, its `pos`.
    struct Place {
        var ord: Int64
        var bucket: Int64
        var pos: Int64
    }

    /// Counts the albums of `library` that match `filter`.
    static func count(_ dialect: SQLDialect, _ library: Int64, _ filter: AlbumFilter, search: SearchPath) -> (String, [SQLValue]) {
        var query = PagingQuery(dialect)
        let (source, match) = query.albums(search)
        let libraryParameter = query.parameter(.integer(library))
        let sql = "SELECT COUNT(*) FROM \(source) WHERE a.library = \(libraryParameter)\(query.conditions(filter))\(match)"
        return (sql, query.bindings)
    }

    // Value sorts

    /// Up to `limit` albums in `sort` order (a value sort), after the key `after` if given and
    /// before the key `before` if given (in the sort's direction), skipping `offset` of them.
    static func valuePage(
        _ dialect: SQLDialect, _ library: Int64, _ filter: AlbumFilter, _ sort: AlbumSort,
        after: (SQLValue, AlbumID)?, before: (SQLValue, AlbumID)? = nil, limit: Int, offset: Int, search: SearchPath
    ) -> (String, [SQLValue]) {
        var query = PagingQuery(dialect)
        let (source, match) = query.albums(search)
        let key = query.sortKey(sort)
        var sql = "SELECT \(PagingQuery.columns) FROM \(source)"
        sql += query.valueRange(library, filter, sort, key, after: after, before: before) + match
        let direction = sort.descending ? " DESC" : ""
        sql += " ORDER BY \(key.order)\(direction), a.album_id\(direction)"
        sql += " LIMIT \(query.parameter(.integer(Int64(limit))))"
        if offset > 0 { sql += " OFFSET \(query.parameter(.integer(Int64(offset))))" }
        return (sql, query.bindings)
    }

    /// Counts at most `limit` albums that match `filter` between the keys `after` and `before`
    /// of `sort` (each end open, in the sort's direction; nil: that end is open wide). The same
    /// index range as a keyset page, counted without reading a row (on SQLite; PostgreSQL
    /// visits the heap unless its visibility map is set): the subquery's LIMIT stops the count
    /// at `limit`. Its ORDER BY is the index's order, which keeps both planners on the index
    /// from the range's start (without it PostgreSQL may scan the table, expecting `limit`
    /// matches early wherever the range lies).
    static func valueCount(
        _ dialect: SQLDialect, _ library: Int64, _ filter: AlbumFilter, _ sort: AlbumSort,
        after: (SQLValue, AlbumID)?, before: (SQLValue, AlbumID)?, limit: Int, search: SearchPath
    ) -> (String, [SQLValue]) {
        var query = PagingQuery(dialect)
        let (source, match) = query.albums(search)
        let key = query.sortKey(sort)
        var sql = "SELECT COUNT(*) FROM (SELECT 1 FROM \(source)"
        sql += query.valueRange(library, filter, sort, key, after: after, before: before) + match
        let direction = sort.descending ? " DESC" : ""
        sql += " ORDER BY \(key.order)\(direction), a.album_id\(direction)"
        sql += " LIMIT \(query.parameter(.integer(Int64(limit))))) AS counted"
        return (sql, query.bindings)
    }

    /// ` WHERE …`: the albums of `library` that match `filter`, strictly after `after` and
    /// strictly before `before` in `sort` order, as row-value comparisons on the sort index's
    /// columns (see `AlbumPages.swift` for why they take this shape).
    private mutating func valueRange(
        _ library: Int64, _ filter: AlbumFilter, _ sort: AlbumSort, _ key: SortKeySQL, after: (SQLValue, AlbumID)?,
        before: (SQLValue, AlbumID)?
    ) -> String {
        var sql = " WHERE a.library = \(parameter(.integer(library)))"
        if let (value, id) = after {
            let valueParameter = parameter(value)
            let idParameter = parameter(.text(id.rawValue))
            sql += " AND (\(key.column), a.album_id) \(sort.descending ? "<" : ">") (\(key.value(valueParameter)), \(idParameter))"
        }
        if let (value, id) = before {
            let valueParameter = parameter(value)
            let idParameter = parameter(.text(id.rawValue))
            sql += " AND (\(key.column), a.album_id) \(sort.descending ? ">" : "<") (\(key.value(valueParameter)), \(idParameter))"
        }
        sql += conditions(filter)
        if sort.field == .year {
            // The same year bounds on the sort key narrow the index range (a page no longer
            // reads past every album before `yearFrom`). Exact: a missing year (key 0) is
            // excluded by the year conditions anyway.
            if let yearFrom = filter.yearFrom { sql += " AND a.year_key >= \(parameter(.integer(Int64(yearFrom))))" }
            if let yearTo = filter.yearTo { sql += " AND a.year_key <= \(parameter(.integer(Int64(yearTo))))" }
        }
        return sql
    }

    /// A value sort's key in SQL: the indexed column (relevance: the rank expression, whose
    /// parameters this binds once), how a bound value compares with it, and its ORDER BY term.
    typealias SortKeySQL = (column: String, value: (String) -> String, order: String)

    private mutating func sortKey(_ sort: AlbumSort) -> SortKeySQL {
        switch sort.field {
        case .title: return ("a.title_sort", { $0 }, "a.title_sort")
        case .artist: return ("a.artist_sort", { $0 }, "a.artist_sort")
        case .genre: return ("a.genre_sort", { $0 }, "a.genre_sort")
        case .year: return ("a.year_key", { $0 }, "a.year_key")
        case .createdAt, .position: return ("a.created_at", { $0 }, "a.created_at")
        case .relevance:
            let rank = rank(sort.search)
            return (rank, { $0 }, rank)
        }
    }

    /// Up to `limit` albums of one rank of a relevance sort (`sort.search`), by id in the
    /// sort's direction, after the id `after` if given: a walk of the library's id index,
    /// each album checked against the filter and its rank. A relevance page whose matches are
    /// many reads them rank by rank (`AlbumPages.rankedPage`), so a page of a rank that many
    /// albums have comes soon, without ranking every match first.
    static func rankPage(
        _ dialect: SQLDialect, _ library: Int64, _ filter: AlbumFilter, _ sort: AlbumSort, rank: Int, after: AlbumID?, limit: Int,
        search: SearchPath
    ) -> (String, [SQLValue]) {
        var query = PagingQuery(dialect)
        let (source, match) = query.albums(search)
        var sql = "SELECT \(PagingQuery.columns) FROM \(source) WHERE a.library = \(query.parameter(.integer(library)))"
        if let after { sql += " AND a.album_id \(sort.descending ? "<" : ">") \(query.parameter(.text(after.rawValue)))" }
        sql += query.conditions(filter) + match
        sql += " AND \(query.rank(sort.search)) = \(query.parameter(.integer(Int64(rank))))"
        sql += " ORDER BY a.album_id\(sort.descending ? " DESC" : "") LIMIT \(query.parameter(.integer(Int64(limit))))"
        return (sql, query.bindings)
    }

    // The library's own order

    /// The matching albums after `place` in its own bucket.
    static func restOfBucket(
        _ dialect: SQLDialect, _ filter: AlbumFilter, descending: Bool, from place: Place, limit: Int
    ) -> (String, [SQLValue]) {
        var query = PagingQuery(dialect)
        let bucket = query.parameter(.integer(place.bucket))
        let pos = query.parameter(.integer(place.pos))
        var sql = "SELECT \(PagingQuery.columns) FROM albums AS a WHERE a.bucket = \(bucket) AND a.pos \(descending ? "<" : ">") \(pos)"
        sql += query.conditions(filter)
        sql += " ORDER BY a.pos\(descending ? " DESC" : "") LIMIT \(query.parameter(.integer(Int64(limit))))"
        return (sql, query.bindings)
    }

    /// The matching albums of the buckets after the bucket `afterOrd` (all buckets when nil).
    static func bucketsAfter(
        _ dialect: SQLDialect, _ library: Int64, _ filter: AlbumFilter, descending: Bool, afterOrd: Int64?, limit: Int,
        skip: Int, search: SearchPath
    ) -> (String, [SQLValue]) {
        let direction = descending ? " DESC" : ""
        var query = PagingQuery(dialect)
        let (albums, match) = query.albums(search)
        let source = if search.isIndex, dialect == .sqlite {
            "\(albums) CROSS JOIN buckets AS b ON b.id = a.bucket"
        } else {
            "buckets AS b JOIN \(albums) ON a.bucket = b.id"
        }
        let libraryParameter = query.parameter(.integer(library))
        let ord = query.parameter(.integer(afterOrd ?? (descending ? .max : .min)))
        var sql = """
            SELECT \(PagingQuery.columns) FROM \(source)
            WHERE b.library = \(libraryParameter) AND b.ord \(descending ? "<" : ">") \(ord)
            """
        sql += query.conditions(filter) + match
        sql += " ORDER BY b.ord\(direction), a.pos\(direction) LIMIT \(query.parameter(.integer(Int64(limit))))"
        if skip > 0 { sql += " OFFSET \(query.parameter(.integer(Int64(skip))))" }
        return (sql, query.bindings)
    }
}
