/// A Swift type that can be read from a column of a result row.
///
/// Conversions are strict: a non-optional type throws a ``SQLiteError`` with code
/// `SQLITE_MISMATCH` when the column is NULL or holds an incompatible storage class
/// (the only widening allowed is INTEGER → `Double`). Use an `Optional` to accept NULL.
public protocol SQLiteColumnDecodable {
    static func decode(from row: Row, at column: Int) throws -> Self
}

extension SQLiteValue: SQLiteColumnDecodable {
    public static func decode(from row: Row, at column: Int) throws -> SQLiteValue {
        row.value(column)
    }
}

extension Int64: SQLiteColumnDecodable {
    public static func decode(from row: Row, at column: Int) throws -> Int64 {
        try row.require(column, .integer)
        return row.rawInt64(column)
    }
}

extension Int: SQLiteColumnDecodable {
    public static func decode(from row: Row, at column: Int) throws -> Int {
        try row.require(column, .integer)
        let value = row.rawInt64(column)
        guard let result = Int(exactly: value) else {
            throw row.mismatch(column, expected: "Int", found: "\(value)")
        }
        return result
    }
}

extension Double: SQLiteColumnDecodable {
    public static func decode(from row: Row, at column: Int) throws -> Double {
        let type = row.type(column)
        guard type == .real || type == .integer else {
            throw row.mismatch(column, expected: "REAL", found: type.rawValue)
        }
        return row.rawDouble(column)
    }
}

extension String: SQLiteColumnDecodable {
    public static func decode(from row: Row, at column: Int) throws -> String {
        try row.require(column, .text)
        return row.rawString(column)
    }
}

extension Array: SQLiteColumnDecodable where Element == UInt8 {
    public static func decode(from row: Row, at column: Int) throws -> [UInt8] {
        try row.require(column, .blob)
        return row.rawBlob(column)
    }
}

extension Bool: SQLiteColumnDecodable {
    public static func decode(from row: Row, at column: Int) throws -> Bool {
        try row.require(column, .integer)
        return row.rawInt64(column) != 0
    }
}

extension Optional: SQLiteColumnDecodable where Wrapped: SQLiteColumnDecodable {
    public static func decode(from row: Row, at column: Int) throws -> Wrapped? {
        if row.isNull(column) { return nil }
        return try Wrapped.decode(from: row, at: column)
    }
}
