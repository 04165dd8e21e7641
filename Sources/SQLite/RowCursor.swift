/// The rows of one running statement, read one at a time: `while let row = try rows.next()`.
///
/// Stopping early is just stopping (a `break`, a `return`): no error is thrown to end the scan,
/// and rows not asked for are never computed. The cursor owns the statement it steps (taken
/// from the connection's cache, see ``Connection/cursor(_:_:)``) until it is dropped, which
/// resets the statement and returns it to the cache. Non-copyable, so exactly one owner does
/// that. A ``Row`` is valid only until the next call to `next()` or the end of the cursor.
///
/// Like its ``Connection``, a cursor belongs to one thread.
public struct RowCursor: ~Copyable {
    private let connection: Connection
    private let statement: Statement
    private var finished = false

    init(connection: Connection, statement: Statement) {
        self.connection = connection
        self.statement = statement
    }

    /// The next row, or `nil` once the statement is done (and every call after that).
    /// - Throws: the `SQLiteError` of the step; the cursor is then finished.
    public mutating func next() throws -> Row? {
        guard !finished else { return nil }
        do {
            if try statement.step() { return statement.row }
        } catch let error as SQLiteError {
            finished = true
            // A statement that failed is not trusted again (see `withStatement`).
            connection.cache.evict(statement)
            throw error
        }
        finished = true
        return nil
    }

    deinit {
        connection.checkIn(statement)
    }
}

@available(*, unavailable)
extension RowCursor: Sendable {}
