import BlueLibraryAPI
import Library
import SQLite

// Filtered, sorted pages (`albums(matching:sort:from:limit:)`, `count(matching:)`).
//
// Value sorts read one index each (`SchemaHistory.sortIndexes`):
//   title     → albums_by_title_sort  (library, title_sort, album_id)    the stored sort keys
//   artist    → albums_by_artist_sort (library, artist_sort, album_id)   (`SortText`, v9)
//   genre     → albums_by_genre_sort  (library, genre_sort, album_id)    (v12)
//   year      → albums_by_year        (library, year_key, album_id)      year_key = IFNULL(year, 0)
//   createdAt → albums_by_created     (library, created_at, album_id)
// A keyset page is `WHERE library = ? AND (key, album_id) > (?, ?) ORDER BY key, album_id
// LIMIT n` (`<` and DESC for descending): SQLite seeks the index to the key and reads n
// entries, whatever the depth. The seek needs the row value's left side to be plain columns,
// checked by tests with EXPLAIN QUERY PLAN: `IFNULL(year, 0)` is the virtual generated column
// `year_key` (an expression inside a row value is never matched against an expression index),
// and the title, artist and genre keys are stored (folded in Swift, compared bytewise on both
// engines: SQLite's BINARY, PostgreSQL's `COLLATE "C"`).
//
// The library's own order (position) walks buckets by `ord` and albums inside by `pos`: the
// rest of the anchor album's bucket, then `buckets JOIN albums ORDER BY b.ord, a.pos` after
// that bucket — nested index loops, no sort.
//
// Filters are plain SQL conditions with the semantics of `AlbumFilter.matches`: a search's
// words found by position in the stored `search_text` (`PagingQuery.search`, with the search
// index narrowing the rows: `SearchIndex`), `= ? COLLATE NOCASE` for artist and genre,
// `year >= ?`/`year <= ?` (NULL years never pass). The SQL text depends only on
// which conditions are present, so each shape is prepared once and cached.
//
// PostgreSQL runs the same statements except for the case-insensitive filters (`SQLDialect`).

/// Filtered, sorted pages of one library inside one transaction (the statements' text comes
/// from `PagingQuery`, `PagingSQL.swift`); unfiltered position offsets go through the
/// ordering's bucket sizes (`SparseOrder`).
struct AlbumPages<DB: SQLSession> {
    let db: DB
    /// The library's row id (a live library: transactions open only on those).
    let library: Int64
    let order: SparseOrder<DB>

    private func searchPath(_ filter: AlbumFilter) throws -> SearchPath {
        try SearchIndex.path(for: filter, db, limits: order.context.searchIndexLimits)
    }

    /// The path of a page in `sort`: a relevance page whose matches the index can list ranks
    /// them all in one statement.
    private func searchPath(_ filter: AlbumFilter, sort: AlbumSort) throws -> SearchPath {
        Self.statementPath(try searchPath(filter), sort: sort)
    }

    /// `path` for one statement of a page in `sort`: a relevance statement sorts every match by
    /// its rank (no index has that order), so it starts from the index's matches whenever it
    /// can list them, rather than walking the library for them.
    private static func statementPath(_ path: SearchPath, sort: AlbumSort) -> SearchPath {
        sort.field == .relevance ? path.everyMatch ?? path : path
    }

    /// The articles the library's artist keys are made with (`libraries.sort_articles`).
    func sortArticles() throws -> SortArticles {
        SortArticles(stored: try db.value(SQL.librarySortArticles, [.integer(library)], as: String.self) ?? "")
    }

    private func album(_ id: AlbumID) throws -> Album? {
        return try db.firstRow(SQL.albumByID, [.integer(library), .text(id.rawValue)], { try StoredRows.album(from: $0) })
    }

    func albums(matching filter: AlbumFilter, sort: AlbumSort, from anchor: SortAnchor, limit: Int) throws -> [Album]? {
        guard limit > 0 else {
            if case let .afterAlbum(id) = anchor, try album(id) == nil { return nil }
            return []
        }
        if sort.field == .position {
            return try positionPage(library, filter, descending: sort.descending, anchor, limit)
        }
        // The search index's answer for every match: the value page's path, and the ranked
        // page's for the ranks it finds by the same query.
        let path = try searchPath(filter)
        if sort.field == .relevance, let query = sort.search, !path.isIndex {
            switch anchor {
            case .start:
                return try rankedPage(filter, sort, query, after: nil, limit: limit, every: path)
            case let .afterValue(.integer(rank), id):
                return try rankedPage(filter, sort, query, after: (Int(clamping: rank), id), limit: limit, every: path)
            default:
                break  // an offset, or a key of another kind: one statement over every match
            }
        }
        let search = Self.statementPath(path, sort: sort)
        switch anchor {
        case .start:
            return try valuePage(library, filter, sort, after: nil, limit: limit, offset: 0, search: search)
        case let .offset(offset):
            return try valuePage(library, filter, sort, after: nil, limit: limit, offset: max(0, offset), search: search)
        case let .afterValue(value, id):
            return try valuePage(library, filter, sort, after: value, id, limit: limit, search: search)
        case let .afterAlbum(id):
            // Not what the facade asks (it pages value sorts by value), but well defined: after
            // the album's current key in this order.
            guard let album = try album(id),
                let value = SortValue.of(album, for: sort.field, articles: try sortArticles(), search: sort.search)
            else {
                return nil
            }
            return try valuePage(library, filter, sort, after: value, id, limit: limit, search: search)
        }
    }

    func count(matching filter: AlbumFilter) throws -> Int {
        if filter.isEmpty { return try order.count() }
        let (sql, bindings) = PagingQuery.count(db.dialect, library, filter, search: try searchPath(filter).everyMatch ?? .walk)
        return try db.value(sql, bindings, as: Int.self) ?? 0
    }

    /// At most `limit` albums matching `filter` in `range` of `sort` (see
    /// `AlbumStoreReader.count(matching:sort:in:limit:)`): one index range, counted.
    func count(matching filter: AlbumFilter, sort: AlbumSort, in range: SortRange, limit: Int) throws -> Int {
        guard limit > 0 else { return 0 }
        guard sort.field != .position else { return min(limit, try count(matching: filter)) }
        guard let (after, before) = Self.bounds(range, sort: sort, db.dialect) else { return 0 }
        if filter.isEmpty, after == nil, before == nil { return min(limit, try order.count()) }
        let (sql, bindings) = PagingQuery.valueCount(
            db.dialect, library, filter, sort, after: after, before: before, limit: limit, search: try searchPath(filter, sort: sort))
        return try db.value(sql, bindings, as: Int.self) ?? 0
    }

    /// Up to `limit` albums matching `filter` in `range` of `sort` after skipping `skipping`
    /// (see `AlbumStoreReader.albums(matching:sort:in:skipping:limit:)`): one keyset page with
    /// an OFFSET, which steps over index entries without reading their rows.
    func albums(matching filter: AlbumFilter, sort: AlbumSort, in range: SortRange, skipping: Int, limit: Int) throws -> [Album] {
        guard limit > 0 else { return [] }
        guard sort.field != .position else {
            return try positionPage(library, filter, descending: sort.descending, .offset(max(0, skipping)), limit) ?? []
        }
        guard let (after, before) = Self.bounds(range, sort: sort, db.dialect) else { return [] }
        let (sql, bindings) = PagingQuery.valuePage(
            db.dialect, library, filter, sort, after: after, before: before, limit: limit, offset: max(0, skipping),
            search: try searchPath(filter, sort: sort))
        return try db.query(sql, bindings, { try StoredRows.album(from: $0) })
    }

    /// A range's ends as bound keys (nil: that end is open wide), or nil when the range is empty
    /// because an end cannot be bound and lies past every key on the wrong side (see `key`).
    private static func bounds(
        _ range: SortRange, sort: AlbumSort, _ dialect: SQLDialect
    ) -> (after: (SQLValue, AlbumID)?, before: (SQLValue, AlbumID)?)? {
        // Where an unbindable key lies in the sort's own direction.
        func first(_ key: Key) -> Bool {
            switch key {
            case .bound: false
            case .beforeEveryKey: !sort.descending
            case .afterEveryKey: sort.descending
            }
        }
        var after: (SQLValue, AlbumID)?
        var before: (SQLValue, AlbumID)?
        if let end = range.after {
            let key = key(end.value, sort: sort.field, dialect)
            if case let .bound(value) = key {
                after = (value, end.id)
            } else if !first(key) {
                return nil  // after every key: nothing is after it
            }
        }
        if let end = range.before {
            let key = key(end.value, sort: sort.field, dialect)
            if case let .bound(value) = key {
                before = (value, end.id)
            } else if first(key) {
                return nil  // before every key: nothing is before it
            }
        }
        return (after, before)
    }

    // MARK: - Value sorts

    /// Up to `limit` albums in `sort` order (a value sort), after the key `after` if given,
    /// skipping `offset` of them.
    private func valuePage(
        _ library: Int64, _ filter: AlbumFilter, _ sort: AlbumSort, after: (SQLValue, AlbumID)?, limit: Int,
        offset: Int, search: SearchPath
    ) throws -> [Album] {
        let (sql, bindings) = PagingQuery.valuePage(
            db.dialect, library, filter, sort, after: after, limit: limit, offset: offset, search: search)
        return try db.query(sql, bindings, { try StoredRows.album(from: $0) })
    }

    /// Up to `limit` albums in `sort` order (a value sort) after the key `(value, id)`.
    private func valuePage(
        _ library: Int64, _ filter: AlbumFilter, _ sort: AlbumSort, after value: SortValue, _ id: AlbumID, limit: Int,
        search: SearchPath
    ) throws -> [Album] {
        switch Self.key(value, sort: sort.field, db.dialect) {
        case let .bound(bound):
            return try valuePage(library, filter, sort, after: (bound, id), limit: limit, offset: 0, search: search)
        case .beforeEveryKey:
            return sort.descending ? [] : try valuePage(library, filter, sort, after: nil, limit: limit, offset: 0, search: search)
        case .afterEveryKey:
            return sort.descending ? try valuePage(library, filter, sort, after: nil, limit: limit, offset: 0, search: search) : []
        }
    }

    /// Up to `limit` albums of a relevance sort whose matches are many (not `isIndex`; `every`
    /// is their path), rank by rank in the sort's direction, each rank by id
    /// (`PagingQuery.rankPage`), after the key `after` if given. Ranks no album of the query can
    /// have are skipped. Each rank is read through the albums the search index holds for it
    /// (`SearchIndex.candidatePath`, `SearchQuery.ftsMatch(rank:)`): skipped when there are
    /// none, read straight from the index when they are a few thousand or fewer, a walk
    /// filtered by them up to `Limits.filter`, else a walk checking the rank on every album
    /// (see docs/api.md, "Relevance").
    private func rankedPage(
        _ filter: AlbumFilter, _ sort: AlbumSort, _ query: SearchQuery, after: (rank: Int, id: AlbumID)?, limit: Int,
        every: SearchPath
    ) throws -> [Album] {
        var ranks = query.possibleRanks
        if sort.descending { ranks.reverse() }
        if let after { ranks.removeAll { sort.descending ? $0 > after.rank : $0 < after.rank } }
        var result: [Album] = []
        // Ranks whose albums the index finds alike (0 and 2: the phrase; the last: every
        // match, already asked) ask it once.
        var paths: [String: SearchPath?] = [(db.dialect == .postgres ? query.tsquery : query.ftsMatch): .some(every)]
        for rank in ranks where result.count < limit {
            let match = db.dialect == .postgres ? query.tsquery(rank: rank) : query.ftsMatch(rank: rank)
            if paths[match] == nil {
                paths[match] = .some(try SearchIndex.candidatePath(match, db, limits: order.context.searchIndexLimits))
            }
            guard case let .some(.some(path)) = paths[match] else { continue }
            let (sql, bindings) = PagingQuery.rankPage(
                db.dialect, library, filter, sort, rank: rank, after: after?.rank == rank ? after?.id : nil, limit: limit - result.count,
                search: path)
            result += try db.query(sql, bindings, { try StoredRows.album(from: $0) })
        }
        return result
    }

    /// A sort key as bound to a keyset page, or where it lies when it cannot be bound.
    enum Key {
        case bound(SQLValue)
        case beforeEveryKey
        case afterEveryKey
    }

    static func key(_ value: SortValue, sort field: AlbumSort.Field, _ dialect: SQLDialect) -> Key {
        // A value of the other kind (text for a number sort) is bound as it is on SQLite: it
        // orders every integer before every text, so the page is well defined (and empty or
        // full). PostgreSQL refuses to compare them; the same order is applied here instead.
        let numberSort = field == .year || field == .createdAt || field == .relevance
        switch value {
        case let .text(text):
            return dialect == .postgres && numberSort ? .afterEveryKey : .bound(.text(text))
        case let .integer(number):
            return dialect == .postgres && !numberSort ? .beforeEveryKey : .bound(.integer(number))
        }
    }

    /// The bindable key of a statement listing (`pageStatements`): a key that cannot be bound
    /// lists the unanchored page's statement.
    private static func boundKey(_ value: SortValue, sort: AlbumSort, _ dialect: SQLDialect) -> SQLValue? {
        if case let .bound(bound) = key(value, sort: sort.field, dialect) { return bound }
        return nil
    }

    // MARK: - The library's own order

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
            if !descending { return try order.albums(offset: offset, limit: limit) }
            let total = try order.count()
            guard offset < total else { return [] }
            let end = total - offset
            return try order.albums(offset: max(0, end - limit), limit: min(limit, end)).reversed()
        case let .afterAlbum(id), let .afterValue(_, id):
            // `.afterValue` has no meaning in the position order; its id stands for the album.
            guard let place = try db.firstRow(
                SQL.pagingPlaceOfAlbum, [.integer(library), .text(id.rawValue)],
                { PagingQuery.Place(ord: try $0.int64(0), bucket: try $0.int64(1), pos: try $0.int64(2)) })
            else { return nil }
            return try walk(library, filter, descending: descending, from: place, limit: limit, skip: 0)
        }
    }

    /// Up to `limit` matching albums in list order (reversed when `descending`) strictly after
    /// `from` (from the first when nil), skipping `skip` matching ones.
    private func walk(
        _ library: Int64, _ filter: AlbumFilter, descending: Bool, from place: PagingQuery.Place?, limit: Int, skip: Int
    ) throws -> [Album] {
        var result: [Album] = []
        if let place {
            let (sql, bindings) = PagingQuery.restOfBucket(db.dialect, filter, descending: descending, from: place, limit: limit)
            result = try db.query(sql, bindings, { try StoredRows.album(from: $0) })
            if result.count >= limit { return result }
        }
        let (sql, bindings) = PagingQuery.bucketsAfter(
            db.dialect, library, filter, descending: descending, afterOrd: place?.ord, limit: limit - result.count, skip: skip,
            search: try searchPath(filter))
        result += try db.query(sql, bindings, { try StoredRows.album(from: $0) })
        return result
    }

    // MARK: - Query plans

    /// The two statements of a stretch of a value order (see `count(matching:sort:in:limit:)`
    /// and `albums(matching:sort:in:skipping:limit:)`): its count, then its page after
    /// `skipping`. Empty for an empty stretch or the position order.
    func rangeStatements(
        matching filter: AlbumFilter, sort: AlbumSort, in range: SortRange, skipping: Int, limit: Int
    ) throws -> [(String, [SQLValue])] {
        guard sort.field != .position, let (after, before) = Self.bounds(range, sort: sort, db.dialect) else { return [] }
        let search = try searchPath(filter, sort: sort)
        return [
            PagingQuery.valueCount(db.dialect, library, filter, sort, after: after, before: before, limit: limit, search: search),
            PagingQuery.valuePage(
                db.dialect, library, filter, sort, after: after, before: before, limit: limit, offset: max(0, skipping), search: search),
        ]
    }

    /// The statements a page of this query runs (for a position anchor: the rest of its bucket,
    /// then the buckets after it), as (SQL, bindings). Empty when the page needs no statement of
    /// its own (an unfiltered position offset goes through `albums(offset:limit:)`; an unknown
    /// anchor album).
    func pageStatements(
        matching filter: AlbumFilter, sort: AlbumSort, from anchor: SortAnchor, limit: Int
    ) throws -> [(String, [SQLValue])] {
        let search = try searchPath(filter, sort: sort)
        if sort.field == .position {
            switch anchor {
            case .start:
                return [PagingQuery.bucketsAfter(
                    db.dialect, library, filter, descending: sort.descending, afterOrd: nil, limit: limit, skip: 0, search: search)]
            case let .offset(offset):
                guard !filter.isEmpty else { return [] }
                return [PagingQuery.bucketsAfter(
                    db.dialect, library, filter, descending: sort.descending, afterOrd: nil, limit: limit, skip: max(0, offset),
                    search: search)]
            case let .afterAlbum(id), let .afterValue(_, id):
                guard let place = try db.firstRow(
                    SQL.pagingPlaceOfAlbum, [.integer(library), .text(id.rawValue)],
                    { PagingQuery.Place(ord: try $0.int64(0), bucket: try $0.int64(1), pos: try $0.int64(2)) })
                else { return [] }
                return [
                    PagingQuery.restOfBucket(db.dialect, filter, descending: sort.descending, from: place, limit: limit),
                    PagingQuery.bucketsAfter(
                        db.dialect, library, filter, descending: sort.descending, afterOrd: place.ord, limit: limit, skip: 0,
                        search: search),
                ]
            }
        }
        let dialect = db.dialect
        switch anchor {
        case .start:
            return [PagingQuery.valuePage(dialect, library, filter, sort, after: nil, limit: limit, offset: 0, search: search)]
        case let .offset(offset):
            return [PagingQuery.valuePage(dialect, library, filter, sort, after: nil, limit: limit, offset: max(0, offset), search: search)]
        case let .afterValue(value, id):
            let after = Self.boundKey(value, sort: sort, dialect).map { ($0, id) }
            return [PagingQuery.valuePage(dialect, library, filter, sort, after: after, limit: limit, offset: 0, search: search)]
        case let .afterAlbum(id):
            guard let album = try album(id),
                let value = SortValue.of(album, for: sort.field, articles: try sortArticles(), search: sort.search)
            else {
                return []
            }
            let after = Self.boundKey(value, sort: sort, dialect).map { ($0, id) }
            return [PagingQuery.valuePage(dialect, library, filter, sort, after: after, limit: limit, offset: 0, search: search)]
        }
    }
}
extension SQLiteAlbumStore {
    /// SQLite's plan (`EXPLAIN QUERY PLAN`, the detail lines joined by "; ") for each statement
    /// a page of this query runs; see `AlbumPages.pageStatements`. For tests and
    /// maintenance: a keyset page should read `USING INDEX albums_by_… (library=? AND (…)>(?,?))`
    /// and never `USE TEMP B-TREE FOR ORDER BY`.
    public func pagePlans(
        _ library: LibraryID, matching filter: AlbumFilter, sort: AlbumSort, from anchor: SortAnchor, limit: Int
    ) throws -> [String] {
        try database.read { db in
            let row = try liveRow(library, db).id
            let pages = AlbumPages(db: db, library: row, order: SparseOrder(db, library: row, context: engine))
            return try pages.pageStatements(matching: filter, sort: sort, from: anchor, limit: limit).map { sql, bindings in
                try db.query(SQL.explainQueryPlan + sql, bindings) { try $0.string(3) }.joined(separator: "; ")
            }
        }
    }

    /// SQLite's plans for a stretch of a value order: its count, then its page after `skipping`
    /// (see `AlbumPages.rangeStatements`). Both should seek the sort's index to the stretch.
    public func rangePlans(
        _ library: LibraryID, matching filter: AlbumFilter, sort: AlbumSort, in range: SortRange, skipping: Int, limit: Int
    ) throws -> [String] {
        try database.read { db in
            let row = try liveRow(library, db).id
            let pages = AlbumPages(db: db, library: row, order: SparseOrder(db, library: row, context: engine))
            return try pages.rangeStatements(matching: filter, sort: sort, in: range, skipping: skipping, limit: limit).map { sql, bindings in
                try db.query(SQL.explainQueryPlan + sql, bindings) { try $0.string(3) }.joined(separator: "; ")
            }
        }
    }
}

