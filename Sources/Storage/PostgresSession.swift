import Postgres
import Synchronization

/// The album engine's session (`SQLSession`) on one PostgreSQL connection, inside one
/// transaction of `PostgresAlbumStore`.
///
/// - SQL text keeps SQLite's `?N` placeholders; each text is rewritten to PostgreSQL's `$N`
///   once per process (`PostgresPlaceholders`), then the connection's prepared-statement cache
///   takes over.
/// - Rows come from whole results (not single-row streaming), so a row callback may run other
///   statements on the session, as the engine does (the albums of each bucket while walking
///   the buckets). The engine reads bounded results only (a bucket, a page, the bucket table).
/// - Errors are the connection's `PostgresError`s, unchanged.
final class PostgresSession: SQLSession {
    typealias Row = PostgresRow

    let connection: PostgresConnection
    private(set) var changes = 0
    /// Appended album rows not sent yet (`queueAlbumRow`), each `SQL.insertAlbum`'s 15 values.
    private var queuedAlbums: [[SQLValue]] = []
    /// Statements `runLater` took while album rows were queued: they follow those rows.
    private var laterThanAlbums: [(sql: String, bindings: [SQLValue])] = []

    init(_ connection: PostgresConnection) {
        self.connection = connection
    }

    var dialect: SQLDialect { .postgres }

    func run(_ sql: String, _ bindings: [SQLValue]) throws {
        try sendQueuedAlbums()
        changes = try connection.run(PostgresPlaceholders.text(sql), Self.parameters(bindings))
    }

    /// Queued on the connection (`PostgresConnection.runLater`), after any album rows queued
    /// before it.
    func runLater(_ sql: String, _ bindings: [SQLValue]) throws {
        if queuedAlbums.isEmpty {
            connection.runLater(PostgresPlaceholders.text(sql), Self.parameters(bindings))
        } else {
            laterThanAlbums.append((sql, bindings))
        }
    }

    func forEachRow(_ sql: String, _ bindings: [SQLValue], _ body: (PostgresRow) throws -> Void) throws {
        try sendQueuedAlbums()
        _ = try connection.query(PostgresPlaceholders.text(sql), Self.parameters(bindings)) { row in try body(row) }
    }

    func scan(_ sql: String, _ bindings: [SQLValue], _ body: (PostgresRow) throws -> Bool) throws {
        try sendQueuedAlbums()
        var going = true
        _ = try connection.query(PostgresPlaceholders.text(sql), Self.parameters(bindings)) { row in
            if going { going = try body(row) }
        }
    }

    func query<T>(_ sql: String, _ bindings: [SQLValue], _ transform: (PostgresRow) throws -> T) throws -> [T] {
        try sendQueuedAlbums()
        return try connection.query(PostgresPlaceholders.text(sql), Self.parameters(bindings), transform)
    }

    func firstRow<T>(_ sql: String, _ bindings: [SQLValue], _ transform: (PostgresRow) throws -> T) throws -> T? {
        try sendQueuedAlbums()
        return try connection.firstRow(PostgresPlaceholders.text(sql), Self.parameters(bindings), transform)
    }

    static func isUniqueViolation(_ error: any Error) -> Bool {
        (error as? PostgresError)?.kind == .uniqueViolation
    }

    func queueAlbumRow(_ bindings: [SQLValue]) throws {
        queuedAlbums.append(bindings)
        if queuedAlbums.count >= PostgresSQL.insertAlbumsChunks[0] { try sendQueuedAlbums() }
    }

    /// Inserts the queued album rows, a few multi-row statements (chunks of fixed sizes, so
    /// each text is prepared once per connection), in the round trip of the statements queued
    /// before them; then queues what `runLater` took meanwhile. The store calls it before its
    /// commit; every other statement of the session calls it first.
    /// - Throws: `LibraryError.conflict` naming the first queued album whose id a library holds.
    func sendQueuedAlbums() throws {
        guard !queuedAlbums.isEmpty else { return }
        let rows = queuedAlbums
        let later = laterThanAlbums
        queuedAlbums = []
        laterThanAlbums = []
        var start = 0
        for chunk in PostgresSQL.insertAlbumsChunks {
            while rows.count - start >= chunk {
                let slice = rows[start..<(start + chunk)]
                let sql = PostgresSQL.insertAlbumsTexts[chunk]!
                let inserted = try connection.query(sql, Self.parameters(slice.flatMap { $0 })) { try $0.string(0) }
                if inserted.count < chunk {
                    let kept = Set(inserted)
                    let skipped = slice.lazy.compactMap { row -> String? in
                        guard case let .text(id) = row[3], !kept.contains(id) else { return nil }
                        return id
                    }.first ?? "?"
                    throw try LibraryTransaction<PostgresSession>.heldElsewhere(skipped, self)
                }
                start += chunk
            }
        }
        for statement in later {
            connection.runLater(PostgresPlaceholders.text(statement.sql), Self.parameters(statement.bindings))
        }
    }

    /// Forgets the album rows and statements queued here and not sent (a write body rolled back
    /// to its savepoint: they were its own).
    func discardQueued() {
        queuedAlbums = []
        laterThanAlbums = []
    }

    /// The engine's values as PostgreSQL parameters (`.blob` is `bytea`).
    static func parameters(_ bindings: [SQLValue]) -> [PostgresValue] {
        bindings.map { value in
            switch value {
            case .null: .null
            case let .integer(number): .integer(number)
            case let .real(number): .real(number)
            case let .text(text): .text(text)
            case let .blob(bytes): .bytes(bytes)
            }
        }
    }
}

extension PostgresRow: SQLRow {}

/// SQLite's `?N` placeholders rewritten to PostgreSQL's `$N`, once per statement text.
enum PostgresPlaceholders {
    /// Texts rewritten so far. The engine's statements are a bounded set (the constants and
    /// the paging shapes), so the cache is too; past `capacity` it starts over.
    private static let cache = Mutex<[String: String]>([:])
    private static let capacity = 4096

    static func text(_ sql: String) -> String {
        if let known = cache.withLock({ $0[sql] }) { return known }
        let rewritten = rewrite(sql)
        cache.withLock { cache in
            if cache.count >= capacity { cache.removeAll(keepingCapacity: true) }
            cache[sql] = rewritten
        }
        return rewritten
    }

    /// `?` followed by digits becomes `$` (outside quoted literals and identifiers); nothing
    /// else changes.
    static func rewrite(_ sql: String) -> String {
        var bytes = Array(sql.utf8)
        var quote: UInt8?
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "'") || byte == UInt8(ascii: "\"") {
                quote = byte
            } else if byte == UInt8(ascii: "?"), index + 1 < bytes.count,
                      bytes[index + 1] >= UInt8(ascii: "0"), bytes[index + 1] <= UInt8(ascii: "9") {
                bytes[index] = UInt8(ascii: "$")
            }
            index += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
