import BlueLibraryAPI
import Library

/// Fills `albums.search_text` (schema v8) on the rows written before it existed, in batches of
/// `batchSize` rows in ascending `row` order, each batch in a write transaction of its own:
/// run by a store when it opens the database, so a search finds every album. Idempotent (a row
/// filled meanwhile is skipped) and cheap when there is nothing to fill: one read of the
/// partial index `albums_without_search_text`, which holds only the rows left to fill.
enum SearchTextBackfill {
    static let batchSize = 1000

    static let rowsToFill = """
        SELECT row, title, artist, genre FROM albums WHERE search_text IS NULL AND row > ?1 ORDER BY row LIMIT \(batchSize)
        """
    static let fill = "UPDATE albums SET search_text = ?1 WHERE row = ?2 AND search_text IS NULL"

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
            (row: try row.int64(0), document: SearchText.document(title: try row.string(1), artist: try row.string(2), genre: try row.string(3)))
        }
        for row in rows { try db.run(fill, [.text(row.document), .integer(row.row)]) }
        return (rows.count, rows.last?.row)
    }
}
