import CSQLite

/// The current row of a statement being stepped.
///
/// A `Row` is a cursor view, not a copy: it is only meaningful inside the closure it was
/// passed to (`forEachRow`, `query`, `firstRow`, ...). Do not store it; extract values instead.
/// Column indexes are 0-based; an out-of-range index is a programming error (trap),
/// like an array subscript.
public struct Row {
    let statement: Statement

    init(statement: Statement) {
        self.statement = statement
    }

    private var handle: OpaquePointer { statement.handle }

    public var columnCount: Int { Int(sqlite3_column_count(handle)) }

    public func columnName(_ column: Int) -> String {
        let index = checked(column)
        guard let name = sqlite3_column_name(handle, index) else { return "" }
        return String(cString: name)
    }

    /// Storage class of the value in `column` for this row.
    public func type(_ column: Int) -> SQLiteColumnType {
        switch sqlite3_column_type(handle, checked(column)) {
        case SQLITE_INTEGER: .integer
        case SQLITE_FLOAT: .real
        case SQLITE_TEXT: .text
        case SQLITE_BLOB: .blob
        default: .null
        }
    }

    public func isNull(_ column: Int) -> Bool { type(column) == .null }

    /// The value in `column`, whatever its storage class.
    public func value(_ column: Int) -> SQLiteValue {
        switch type(column) {
        case .null: .null
        case .integer: .integer(rawInt64(column))
        case .real: .real(rawDouble(column))
        case .text: .text(rawString(column))
        case .blob: .blob(rawBlob(column))
        }
    }

    /// Decodes `column` as `T` (see ``SQLiteColumnDecodable`` for the conversion rules).
    public func get<T: SQLiteColumnDecodable>(_ column: Int, as type: T.Type = T.self) throws -> T {
        try T.decode(from: self, at: column)
    }

    public func int(_ column: Int) throws -> Int { try get(column) }
    public func int64(_ column: Int) throws -> Int64 { try get(column) }
    public func double(_ column: Int) throws -> Double { try get(column) }
    public func string(_ column: Int) throws -> String { try get(column) }
    public func blob(_ column: Int) throws -> [UInt8] { try get(column) }
    public func bool(_ column: Int) throws -> Bool { try get(column) }

    // MARK: - Raw access (no type checks; used by the decoders)

    func rawInt64(_ column: Int) -> Int64 {
        sqlite3_column_int64(handle, checked(column))
    }

    func rawDouble(_ column: Int) -> Double {
        sqlite3_column_double(handle, checked(column))
    }

    func rawString(_ column: Int) -> String {
        let index = checked(column)
        // Order matters: fetch the text first, then its byte length.
        guard let text = sqlite3_column_text(handle, index) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, index))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    func rawBlob(_ column: Int) -> [UInt8] {
        let index = checked(column)
        // A zero-length blob is returned as a NULL pointer.
        guard let bytes = sqlite3_column_blob(handle, index) else { return [] }
        let count = Int(sqlite3_column_bytes(handle, index))
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }

    func require(_ column: Int, _ expected: SQLiteColumnType) throws {
        let actual = type(column)
        guard actual == expected else {
            throw mismatch(column, expected: expected.rawValue, found: actual.rawValue)
        }
    }

    func mismatch(_ column: Int, expected: String, found: String) -> SQLiteError {
        SQLiteError(
            extendedCode: SQLITE_MISMATCH,
            message: "column \(column) (\(columnName(column))): expected \(expected), found \(found)",
            sql: statement.sql
        )
    }

    private func checked(_ column: Int) -> Int32 {
        precondition(column >= 0 && column < columnCount, "column index \(column) out of range 0..<\(columnCount)")
        return Int32(column)
    }
}
