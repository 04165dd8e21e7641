import Library
import SQLite

// Filtered, sorted pages (`albums(matching:sort:from:limit:)`, `count(matching:)`).
//
// Value sorts read one index each (migration "v3-sort-indexes"):
//   title     → albums_by_title   (library, title COLLATE NOCASE, album_id)
//   artist    → albums_by_artist  (library, artist COLLATE NOCASE, album_id)
//   year      → albums_by_year    (library, year_key, album_id)   year_key = IFNULL(year, 0)
//   createdAt → albums_by_created (library, created_at, album_id)
// A keyset page is `WHERE library = ? AND (key, album_id) > (?, ?) ORDER BY key, album_id
// LIMIT n` (`<` and DESC for descending): SQLite seeks the index to the key and reads n
// entries, whatever the depth. Two details make the seek possible, both checked by tests with
// EXPLAIN QUERY PLAN:
// - the row value's left side must be plain columns, so the case-insensitive collation goes on
//   the bound value (`(a.title, a.album_id) > (?2 COLLATE NOCASE, ?3)`; SQLite then compares
//   the pair with NOCASE, the index's collation);
// - `IFNULL(year, 0)` is the virtual generated column `year_key` (an expression inside a row
//   value is never matched against an expression index).
//
// The library's own order (position) walks buckets by `ord` and albums inside by `pos`: the
// rest of the anchor album's bucket, then `buckets JOIN albums ORDER BY b.ord, a.pos` after
// that bucket — nested index loops, no sort.
//
// Filters are plain SQL conditions with the semantics of `AlbumFilter.matches`: `LIKE` (ASCII
// case-insensitive, %, _ and \ escaped) on title or artist, `= ? COLLATE NOCASE` for artist
// and genre, `year >= ?`/`year <= ?` (NULL years never pass). The SQL text depends only on
// which conditions are present, so each shape is prepared once and cached.

extension LibraryTransaction {
    func albums(matching filter: AlbumFilter, sort: AlbumSort, from anchor: SortAnchor, limit: Int) throws -> [Album]? {
        guard let library else {
            if case .afterAlbum = anchor { return nil }
            return []
        }
        guard limit > 0 else {
            if case let .afterAlbum(id) = anchor, try album(id: id) == nil { return nil }
            return []
        }
        if sort.field == .position {
            return try positionPage(library, filter, descending: sort.descending, anchor, limit)
        }
        switch anchor {
        case .start:
            return try valuePage(library, filter, sort, after: nil, limit: limit, offset: 0)
        case let .offset(offset):
            return try valuePage(library, filter, sort, after: nil, limit: limit, offset: max(0, offset))
        case let .afterValue(value, id):
            return try valuePage(library, filter, sort, after: (Self.sqliteValue(value), id), limit: limit, offset: 0)
        case let .afterAlbum(id):
            // Not what the facade asks (it pages value sorts by value), but well defined: after
            // the album's current key in this order.
            guard let album = try album(id: id), let value = SortValue.of(album, for: sort.field) else { return nil }
            return try valuePage(library, filter, sort, after: (Self.sqliteValue(value), id), limit: limit, offset: 0)
        }
    }

    func count(matching filter: AlbumFilter) throws -> Int {
        if filter.isEmpty { return try count() }
        guard let library else { return 0 }
        var query = PagingQuery()
        let libraryParameter = query.parameter(.integer(library))
        let sql = "SELECT COUNT(*) FROM albums AS a WHERE a.library = \(libraryParameter)\(query.conditions(filter))"
        return try db.scalar(sql, query.bindings, as: Int.self) ?? 0
    }

    // MARK: - Value sorts

    /// Up to `limit` albums in `sort` order (a value sort), after the key `after` if given,
    /// skipping `offset` of them.
    private func valuePage(
        _ library: Int64, _ filter: AlbumFilter, _ sort: AlbumSort, after: (SQLiteValue, AlbumID)?, limit: Int,
        offset: Int
    ) throws -> [Album] {
        let (sql, bindings) = Self.valuePageStatement(library, filter, sort, after: after, limit: limit, offset: offset)
        return try db.query(sql, bindings, Self.album(from:))
    }

    static func valuePageStatement(
        _ library: Int64, _ filter: AlbumFilter, _ sort: AlbumSort, after: (SQLiteValue, AlbumID)?, limit: Int,
        offset: Int
    ) -> (String, [SQLiteValue]) {
        let (column, collation) = Self.sortKey(sort.field)
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

    private static func sqliteValue(_ value: SortValue) -> SQLiteValue {
        // A value of the other kind (text for a number sort) is bound as it is: SQLite orders
        // every integer before every text, so the page is well defined (and empty or full).
        switch value {
        case let .text(text): .text(text)
        case let .integer(number): .integer(number)
        }
    }

    // MARK: - The library's own order

    /// Where an album sits in the order: its bucket's `ord`, the bucket, its `pos`.
    private struct Place {
        var ord: Int64
        var bucket: Int64
        var pos: Int64
    }

    private func positionPage(
        _ library: Int64, _ filter: AlbumFilter, descending: Bool, _ anchor: SortAnchor, _ limit: Int
    ) throws -> [Album]? {
        switch anchor {
        case .start:
            return try walk(library, filter, descending: descending, from: nil, limit: limit, skip: 0)
        case let .offset(offset):
            let offset = max(0, offset)
            guard filter.isEmpty else {
                return try walk(library, filter, descending: descending, from: nil, limit: limit, skip: offset)
            }
            // Unfiltered: positions are known, so jump there through the bucket sizes.
            if !descending { return try albums(offset: offset, limit: limit) }
            let total = try count()
            guard offset < total else { return [] }
            let end = total - offset
            return try albums(offset: max(0, end - limit), limit: min(limit, end)).reversed()
        case let .afterAlbum(id), let .afterValue(_, id):
            // `.afterValue` has no meaning in the position order; its id stands for the album.
            guard let place = try db.firstRow(
                SQL.pagingPlaceOfAlbum, [.integer(library), .text(id.rawValue)],
                { Place(ord: try $0.int64(0), bucket: try $0.int64(1), pos: try $0.int64(2)) })
            else { return nil }
            return try walk(library, filter, descending: descending, from: place, limit: limit, skip: 0)
        }
    }

    /// Up to `limit` matching albums in list order (reversed when `descending`) strictly after
    /// `from` (from the first when nil), skipping `skip` matching ones.
    private func walk(
        _ library: Int64, _ filter: AlbumFilter, descending: Bool, from place: Place?, limit: Int, skip: Int
    ) throws -> [Album] {
        var result: [Album] = []
        if let place {
            let (sql, bindings) = Self.restOfBucketStatement(filter, descending: descending, from: place, limit: limit)
            result = try db.query(sql, bindings, Self.album(from:))
            if result.count >= limit { return result }
        }
        let (sql, bindings) = Self.bucketsAfterStatement(
            library, filter, descending: descending, afterOrd: place?.ord, limit: limit - result.count, skip: skip)
        result += try db.query(sql, bindings, Self.album(from:))
        return result
    }

    /// The matching albums after `place` in its own bucket.
    private static func restOfBucketStatement(
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
    private static func bucketsAfterStatement(
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

    // MARK: - Query plans

    /// The statements a page of this query runs (for a position anchor: the rest of its bucket,
    /// then the buckets after it), as (SQL, bindings). Empty when the page needs no statement of
    /// its own (an unfiltered position offset goes through `albums(offset:limit:)`; an unknown
    /// anchor album).
    func pageStatements(
        matching filter: AlbumFilter, sort: AlbumSort, from anchor: SortAnchor, limit: Int
    ) throws -> [(String, [SQLiteValue])] {
        guard let library else { return [] }
        if sort.field == .position {
            switch anchor {
            case .start:
                return [Self.bucketsAfterStatement(library, filter, descending: sort.descending, afterOrd: nil, limit: limit, skip: 0)]
            case let .offset(offset):
                guard !filter.isEmpty else { return [] }
                return [Self.bucketsAfterStatement(
                    library, filter, descending: sort.descending, afterOrd: nil, limit: limit, skip: max(0, offset))]
            case let .afterAlbum(id), let .afterValue(_, id):
                guard let place = try db.firstRow(
                    SQL.pagingPlaceOfAlbum, [.integer(library), .text(id.rawValue)],
                    { Place(ord: try $0.int64(0), bucket: try $0.int64(1), pos: try $0.int64(2)) })
                else { return [] }
                return [
                    Self.restOfBucketStatement(filter, descending: sort.descending, from: place, limit: limit),
                    Self.bucketsAfterStatement(library, filter, descending: sort.descending, afterOrd: place.ord, limit: limit, skip: 0),
                ]
            }
        }
        switch anchor {
        case .start:
            return [Self.valuePageStatement(library, filter, sort, after: nil, limit: limit, offset: 0)]
        case let .offset(offset):
            return [Self.valuePageStatement(library, filter, sort, after: nil, limit: limit, offset: max(0, offset))]
        case let .afterValue(value, id):
            return [Self.valuePageStatement(library, filter, sort, after: (Self.sqliteValue(value), id), limit: limit, offset: 0)]
        case let .afterAlbum(id):
            guard let album = try album(id: id), let value = SortValue.of(album, for: sort.field) else { return [] }
            return [Self.valuePageStatement(library, filter, sort, after: (Self.sqliteValue(value), id), limit: limit, offset: 0)]
        }
    }
}

extension SQLiteAlbumStore {
    /// SQLite's plan (`EXPLAIN QUERY PLAN`, the detail lines joined by "; ") for each statement
    /// a page of this query runs; see `LibraryTransaction.pageStatements`. For tests and
    /// maintenance: a keyset page should read `USING INDEX albums_by_… (library=? AND (…)>(?,?))`
    /// and never `USE TEMP B-TREE FOR ORDER BY`.
    public func pagePlans(
        _ library: LibraryID, matching filter: AlbumFilter, sort: AlbumSort, from anchor: SortAnchor, limit: Int
    ) throws -> [String] {
        try database.read { db in
            let row = try db.scalar(SQL.libraryID, [.text(library.rawValue)], as: Int64.self)
            let transaction = LibraryTransaction(db, library: row, store: self)
            return try transaction.pageStatements(matching: filter, sort: sort, from: anchor, limit: limit).map { sql, bindings in
                try db.query(SQL.explainQueryPlan + sql, bindings) { try $0.string(3) }.joined(separator: "; ")
            }
        }
    }
}

/// The text and bindings of one paging statement, parameters numbered in the order they are
/// added (so the text is the same for every query of one shape).
struct PagingQuery {
    private(set) var bindings: [SQLiteValue] = []

    /// Album columns in the order `LibraryTransaction.album(from:)` reads them (alias `a`).
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
