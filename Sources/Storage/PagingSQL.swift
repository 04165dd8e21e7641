import Library
import SQLite

/// The text and bindings of one paging statement, parameters numbered in the order they are
/// added (so the text is the same for every query of one shape).
struct PagingQuery {
    private(set) var bindings: [SQLiteValue] = []

    /// Album columns in the order `StoredRows.album(from:)` reads them (alias `a`).
    static let columns = "a.album_id, a.title, a.artist, a.genre, a.year, a.cover_url, a.created_at, a.updated_at"

    /// Binds `value` and returns its placeholder.
    mutating func parameter(_ value: SQLiteValue) -> String {
        bindings.append(value)
        return "?\(bindings.count)"
    }

    /// ` AND …` for each condition of `filter` (empty for the empty filter), on alias `a`.
    mutating func conditions(_ filter: AlbumFilter) -> String {
        var sql = ""
        if let text = filter.text, !text.isEmpty {
            let pattern = parameter(.text("%" + Self.escapedForLike(text) + "%"))
            sql += " AND (a.title LIKE \(pattern) ESCAPE '\\' OR a.artist LIKE \(pattern) ESCAPE '\\')"
        }
        if let artist = filter.artist { sql += " AND a.artist = \(parameter(.text(artist))) COLLATE NOCASE" }
        if let genre = filter.genre { sql += " AND a.genre = \(parameter(.text(genre))) COLLATE NOCASE" }
        if let yearFrom = filter.yearFrom { sql += " AND a.year >= \(parameter(.integer(Int64(yearFrom))))" }
        if let yearTo = filter.yearTo { sql += " AND a.year <= \(parameter(.integer(Int64(yearTo))))" }
        return sql
    }

    /// `text` as a literal inside a LIKE pattern with `ESCAPE '\'`.
    static func escapedForLike(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            if character == "\\" || character == "%" || character == "_" { escaped.unicodeScalars.append("\\") }
            escaped.unicodeScalars.append(character)
        }
        return escaped
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
    static func count(_ library: Int64, _ filter: AlbumFilter) -> (String, [SQLiteValue]) {
        var query = PagingQuery()
        let libraryParameter = query.parameter(.integer(library))
        let sql = "SELECT COUNT(*) FROM albums AS a WHERE a.library = \(libraryParameter)\(query.conditions(filter))"
        return (sql, query.bindings)
    }

    // Value sorts

    /// Up to `limit` albums in `sort` order (a value sort), after the key `after` if given,
    /// skipping `offset` of them.
    static func valuePage(
        _ library: Int64, _ filter: AlbumFilter, _ sort: AlbumSort, after: (SQLiteValue, AlbumID)?, limit: Int,
        offset: Int
    ) -> (String, [SQLiteValue]) {
        let (column, collation) = sortKey(sort.field)
        var query = PagingQuery()
        var sql = "SELECT \(PagingQuery.columns) FROM albums AS a WHERE a.library = \(query.parameter(.integer(library)))"
        if let (value, id) = after {
            let valueParameter = query.parameter(value)
            let idParameter = query.parameter(.text(id.rawValue))
            sql += " AND (\(column), a.album_id) \(sort.descending ? "<" : ">") (\(valueParameter)\(collation), \(idParameter))"
        }
        sql += query.conditions(filter)
        if sort.field == .year {
            // The same year bounds on the sort key narrow the index range (a page no longer
            // reads past every album before `yearFrom`). Exact: a missing year (key 0) is
            // excluded by the year conditions anyway.
            if let yearFrom = filter.yearFrom { sql += " AND a.year_key >= \(query.parameter(.integer(Int64(yearFrom))))" }
            if let yearTo = filter.yearTo { sql += " AND a.year_key <= \(query.parameter(.integer(Int64(yearTo))))" }
        }
        let direction = sort.descending ? " DESC" : ""
        sql += " ORDER BY \(column)\(collation)\(direction), a.album_id\(direction)"
        sql += " LIMIT \(query.parameter(.integer(Int64(limit))))"
        if offset > 0 { sql += " OFFSET \(query.parameter(.integer(Int64(offset))))" }
        return (sql, query.bindings)
    }

    /// The indexed column of a value sort and the collation its comparisons need.
    private static func sortKey(_ field: AlbumSort.Field) -> (column: String, collation: String) {
        switch field {
        case .title: ("a.title", " COLLATE NOCASE")
        case .artist: ("a.artist", " COLLATE NOCASE")
        case .year: ("a.year_key", "")
        case .createdAt, .position: ("a.created_at", "")
        }
    }

    // The library's own order

    /// The matching albums after `place` in its own bucket.
    static func restOfBucket(
        _ filter: AlbumFilter, descending: Bool, from place: Place, limit: Int
    ) -> (String, [SQLiteValue]) {
        var query = PagingQuery()
        let bucket = query.parameter(.integer(place.bucket))
        let pos = query.parameter(.integer(place.pos))
        var sql = "SELECT \(PagingQuery.columns) FROM albums AS a WHERE a.bucket = \(bucket) AND a.pos \(descending ? "<" : ">") \(pos)"
        sql += query.conditions(filter)
        sql += " ORDER BY a.pos\(descending ? " DESC" : "") LIMIT \(query.parameter(.integer(Int64(limit))))"
        return (sql, query.bindings)
    }

    /// The matching albums of the buckets after the bucket `afterOrd` (all buckets when nil).
    static func bucketsAfter(
        _ library: Int64, _ filter: AlbumFilter, descending: Bool, afterOrd: Int64?, limit: Int, skip: Int
    ) -> (String, [SQLiteValue]) {
        let direction = descending ? " DESC" : ""
        var query = PagingQuery()
        let libraryParameter = query.parameter(.integer(library))
        let ord = query.parameter(.integer(afterOrd ?? (descending ? .max : .min)))
        var sql = """
            SELECT \(PagingQuery.columns) FROM buckets AS b JOIN albums AS a ON a.bucket = b.id
            WHERE b.library = \(libraryParameter) AND b.ord \(descending ? "<" : ">") \(ord)
            """
        sql += query.conditions(filter)
        sql += " ORDER BY b.ord\(direction), a.pos\(direction) LIMIT \(query.parameter(.integer(Int64(limit))))"
        if skip > 0 { sql += " OFFSET \(query.parameter(.integer(Int64(skip))))" }
        return (sql, query.bindings)
    }
}
