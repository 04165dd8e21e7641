import CPostgres

/// One row of a result, read in text format.
///
/// A `PostgresRow` is a view into a result, not a copy: it is only meaningful inside the
/// closure it was passed to (`forEachRow`, `query`, `firstRow`, ...). Do not store it; extract
/// values instead. Column indexes are 0-based; an out-of-range index is a programming error
/// (trap), like an array subscript.
public struct PostgresRow {
    let result: PostgresResult
    let index: Int32
    let sql: String?

    init(result: PostgresResult, index: Int, sql: String?) {
        self.result = result
        self.index = Int32(index)
        self.sql = sql
    }

    public var columnCount: Int { result.columnCount }

    public func columnName(_ column: Int) -> String {
        guard let name = PQfname(result.handle, checked(column)) else { return "" }
        return String(cString: name)
    }

    /// The type OID of `column` (e.g. 20 for `bigint`, 25 for `text`).
    public func typeOID(_ column: Int) -> UInt32 {
        PQftype(result.handle, checked(column))
    }

    public func isNull(_ column: Int) -> Bool {
        PQgetisnull(result.handle, index, checked(column)) == 1
    }

    /// The value in `column` by its type: integer types (and a `numeric` holding an integer)
    /// as `.integer`, floating types and other `numeric`s as `.real`, `boolean`, `bytea`, and
    /// every other type as its text.
    public func value(_ column: Int) -> PostgresValue {
        if isNull(column) { return .null }
        switch typeOID(column) {
        case TypeOID.int2, TypeOID.int4, TypeOID.int8, TypeOID.oid:
            return Int64(rawString(column)).map(PostgresValue.integer) ?? .text(rawString(column))
        case TypeOID.float4, TypeOID.float8:
            return Double(rawString(column)).map(PostgresValue.real) ?? .text(rawString(column))
        case TypeOID.numeric:
            let text = rawString(column)
            if let integer = Int64(text) { return .integer(integer) }
            return Double(text).map(PostgresValue.real) ?? .text(text)
        case TypeOID.bool:
            return .bool(rawString(column) == "t")
        case TypeOID.bytea:
            return (try? decodeHexBytea(column)).map(PostgresValue.bytes) ?? .text(rawString(column))
        default:
            return .text(rawString(column))
        }
    }

    /// Decodes `column` as `T` (see ``PostgresDecodable`` for the conversion rules).
    public func get<T: PostgresDecodable>(_ column: Int, as type: T.Type = T.self) throws -> T {
        try T.decode(from: self, at: column)
    }

    public func int(_ column: Int) throws -> Int { try get(column) }
    public func int64(_ column: Int) throws -> Int64 { try get(column) }
    public func double(_ column: Int) throws -> Double { try get(column) }
    public func string(_ column: Int) throws -> String { try get(column) }
    public func blob(_ column: Int) throws -> [UInt8] { try get(column) }
    public func bool(_ column: Int) throws -> Bool { try get(column) }

    // MARK: - Raw access (no type checks; used by the decoders)

    /// The column's bytes as sent (text format): valid while the result lives.
    func rawBytes(_ column: Int) -> UnsafeRawBufferPointer {
        let field = checked(column)
        guard let value = PQgetvalue(result.handle, index, field) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: value, count: Int(PQgetlength(result.handle, index, field)))
    }

    func rawString(_ column: Int) -> String {
        String(decoding: rawBytes(column), as: UTF8.self)
    }

    /// A `bytea` column in the server's hex output format (`\x0a1b…`).
    func decodeHexBytea(_ column: Int) throws -> [UInt8] {
        let text = rawBytes(column)
        guard text.count >= 2, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x"), text.count % 2 == 0 else {
            throw mismatch(column, expected: "bytea in hex format", found: "other text")
        }
        var bytes = [UInt8](repeating: 0, count: (text.count - 2) / 2)
        var offset = 2
        for position in bytes.indices {
            guard let high = hexDigit(text[offset]), let low = hexDigit(text[offset + 1]) else {
                throw mismatch(column, expected: "bytea in hex format", found: "a non-hex digit")
            }
            bytes[position] = high << 4 | low
            offset += 2
        }
        return bytes
    }

    func requireNotNull(_ column: Int, _ expected: String) throws {
        if isNull(column) { throw mismatch(column, expected: expected, found: "NULL") }
    }

    func mismatch(_ column: Int, expected: String, found: String) -> PostgresError {
        PostgresError(
            kind: .other,
            message: "column \(column) (\(columnName(column))): expected \(expected), found \(found)",
            sql: sql
        )
    }

    /// The name of the column's type, for messages.
    func typeName(_ column: Int) -> String {
        switch typeOID(column) {
        case TypeOID.bool: "boolean"
        case TypeOID.bytea: "bytea"
        case TypeOID.int2: "smallint"
        case TypeOID.int4: "integer"
        case TypeOID.int8: "bigint"
        case TypeOID.text: "text"
        case TypeOID.float4: "real"
        case TypeOID.float8: "double precision"
        case TypeOID.numeric: "numeric"
        case let oid: "type \(oid)"
        }
    }

    private func checked(_ column: Int) -> Int32 {
        precondition(column >= 0 && column < columnCount, "column index \(column) out of range 0..<\(columnCount)")
        return Int32(column)
    }
}

@available(*, unavailable)
extension PostgresRow: Sendable {}

private func hexDigit(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}
