import SQLite

/// Tells whether the database changed since the last look (`PRAGMA data_version` on a
/// connection of its own, which moves whenever any other connection commits). One thread at a
/// time: it is meant for one polling thread.
public final class DatabaseChangeWatch: @unchecked Sendable {
    private let connection: Connection
    private var last: Int64

    init(path: String) throws {
        connection = try Connection(path: path, mode: .readOnly)
        last = 0
        last = try version()
    }

    private func version() throws -> Int64 {
        try connection.firstRow(SQL.dataVersion) { row in try row.int64(0) } ?? 0
    }

    /// Whether anything was committed since the previous call (or since the watch was made).
    public func hasChanged() throws -> Bool {
        let now = try version()
        defer { last = now }
        return now != last
    }
}
