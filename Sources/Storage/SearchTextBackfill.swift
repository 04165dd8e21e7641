import BlueLibraryAPI
import Library

/// Fills `albums.search_text` (schema v8) and the sort keys `title_sort`, `artist_sort` (v9;
/// the artist's with its library's `sort_articles`) and `genre_sort` (v12) on the rows whose
/// `search_text` is NULL (written before v8, or emptied by v9 or v12), in batches of
/// `batchSize` rows in ascending `row` order, each batch in a write transaction of its own:
/// run by a store when it opens the database, so a search finds every album. Idempotent (a row
/// filled meanwhile is skipped) and cheap when there is nothing to fill: one read of the
/// partial index `albums_without_search_text`, which holds only the rows left to fill.
enum SearchTextBackfill {
    static let batchSize = 1000

    static let rowsToFill = """
        SELECT a.row, a.title, a.artist, a.genre, l.sort_articles FROM albums AS a JOIN libraries AS l ON l.id = a.library
        WHERE a.search_text IS NULL AND a.row > ?1 ORDER BY a.row LIMIT \(batchSize)
        """
    static let fill = """
        UPDATE albums SET search_text = ?1, title_sort = ?3, artist_sort = ?4, genre_sort = ?5 WHERE row = ?2 AND search_text IS NULL
        """

    /// Fills every row; `inWriteTransaction` runs its body in one write transaction. Returns
    /// the rows filled.
    @discardableResult
    static func run<DB: SQLSession>(_ inWriteTransaction: (_ batch: (DB) throws -> Batch) throws -> Batch) throws -> Int {
        var after: Int64 = 0
        var total = 0
        while true {
            let batch = try inWriteTransaction { db in try fillBatch(db, after: after) }
            total += batch.filled
            guard let last = batch.last else { return total }
            after = last
        }
    }

    /// Rows filled by one batch, and the last row it looked at (nil: there was none).
    typealias Batch = (filled: Int, last: Int64?)

    /// Fills the next batch after row `after`.
    static func fillBatch(_ db: some SQLSession, after: Int64) throws -> Batch {
        let rows = try db.query(rowsToFill, [.integer(after)]) { row in
            let (title, artist, genre) = (try row.string(1), try row.string(2), try row.string(3))
            return (
                row: try row.int64(0),
                values: [
                    SQLValue.text(SearchText.document(title: title, artist: artist, genre: genre)),
                    .text(SortText.key(title)),
                    .text(SortText.artistKey(artist, ignoring: SortArticles(stored: try row.string(4)))),
                    .text(SortText.key(genre)),
                ])
        }
        for row in rows {
            try db.run(fill, [row.values[0], .integer(row.row), row.values[1], row.values[2], row.values[3]])
        }
        return (rows.count, rows.last?.row)
    }
}
