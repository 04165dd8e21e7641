import BlueLibraryAPI
import Library

/// Fills in the values Swift computes (no SQL statement can: the folding is Swift's) on album
/// rows written before their column existed. Run by a store when it opens the database, in
/// batches of `batchSize` rows in ascending `row` order, each batch in a write transaction of
/// its own. Two passes, each idempotent (a row filled meanwhile is skipped) and
/// cheap when there is nothing to fill: one read of a partial index that holds only the rows
/// left to fill.
/// - `searchText`: `search_text` (schema v8) and the sort keys `title_sort`, `artist_sort` (v9;
///   the artist's with its library's `sort_articles`) and `genre_sort` (v12) of the rows whose
///   `search_text` is NULL (written before v8, or emptied by v9), through
///   `albums_without_search_text`.
/// - `genreKey`: `genre_sort` of the rows that have their search text but no genre key (written
///   before v12), through `albums_without_genre_sort`. The search text stays as it is, so the
///   search index is not touched.
enum SearchTextBackfill {
    static let batchSize = 1000

    /// One pass: the rows it fills, and how each row's values are made and written.
    struct Pass: Sendable {
        /// Selects up to `batchSize` rows after `row` ?1, `row` first.
        let rowsToFill: String
        /// Writes one row (`row` is ?1), unless filled meanwhile.
        let fill: String
        /// The values `fill` binds after the row, from the selected row.
        let values: @Sendable (any SQLRow) throws -> [SQLValue]

        static let searchText = Pass(
            rowsToFill: """
                SELECT a.row, a.title, a.artist, a.genre, l.sort_articles FROM albums AS a JOIN libraries AS l ON l.id = a.library
                WHERE a.search_text IS NULL AND a.row > ?1 ORDER BY a.row LIMIT \(batchSize)
                """,
            fill: """
                UPDATE albums SET search_text = ?2, title_sort = ?3, artist_sort = ?4, genre_sort = ?5 WHERE row = ?1 AND search_text IS NULL
                """,
            values: { row in
                let (title, artist, genre) = (try row.string(1), try row.string(2), try row.string(3))
                return [
                    .text(SearchText.document(title: title, artist: artist, genre: genre)),
                    .text(SortText.key(title)),
                    .text(SortText.artistKey(artist, ignoring: SortArticles(stored: try row.string(4)))),
                    .text(SortText.key(genre)),
                ]
            })

        static let genreKey = Pass(
            rowsToFill: "SELECT row, genre FROM albums WHERE genre_sort IS NULL AND row > ?1 ORDER BY row LIMIT \(batchSize)",
            fill: "UPDATE albums SET genre_sort = ?2 WHERE row = ?1 AND genre_sort IS NULL",
            values: { row in [.text(SortText.key(try row.string(1)))] })
    }

    /// Runs both passes over every row; `inWriteTransaction` runs its body in one write
    /// transaction. Returns the rows filled.
    @discardableResult
    static func run<DB: SQLSession>(_ inWriteTransaction: (_ batch: (DB) throws -> Batch) throws -> Batch) throws -> Int {
        var total = 0
        for pass in [Pass.searchText, .genreKey] {
            var after: Int64 = 0
            while true {
                let batch = try inWriteTransaction { db in try fillBatch(pass, db, after: after) }
                total += batch.filled
                guard let last = batch.last else { break }
                after = last
            }
        }
        return total
    }

    /// Rows filled by one batch, and the last row it looked at (nil: there was none).
    typealias Batch = (filled: Int, last: Int64?)

    /// Fills `pass`'s next batch after row `after`.
    static func fillBatch(_ pass: Pass, _ db: some SQLSession, after: Int64) throws -> Batch {
        let rows = try db.query(pass.rowsToFill, [.integer(after)]) { row in (row: try row.int64(0), values: try pass.values(row)) }
        // Queued on PostgreSQL: a batch's updates go out together, not a round trip each.
        for row in rows {
            try db.runLater(pass.fill, [.integer(row.row)] + row.values)
        }
        return (rows.count, rows.last?.row)
    }
}
