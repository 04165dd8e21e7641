/// A Swift type that can be read from a column of a result row.
///
/// Conversions are strict: a non-optional type throws a ``PostgresError`` (kind `.other`) when
/// the column is NULL or of an incompatible type. Allowed: integer types (and a `numeric`
/// holding an integer) → `Int`/`Int64`; integer, floating and `numeric` types → `Double`;
/// `boolean` (or an integer type, non-zero is true) → `Bool`; `bytea` → `[UInt8]`; any type
/// but `bytea` → `String` (its text form). Use an `Optional` to accept NULL.
public protocol PostgresDecodable {
    static func decode(from row: PostgresRow, at column: Int) throws -> Self
}

extension PostgresValue: PostgresDecodable {
    public static func decode(from row: PostgresRow, at column: Int) throws -> PostgresValue {
        row.value(column)
    }
}

extension Int64: PostgresDecodable {
    public static func decode(from row: PostgresRow, at column: Int) throws -> Int64 {
        try row.requireNotNull(column, "bigint")
        switch row.typeOID(column) {
        case TypeOID.int2, TypeOID.int4, TypeOID.int8, TypeOID.oid, TypeOID.numeric:
            let text = row.rawString(column)
            guard let value = Int64(text) else { throw row.mismatch(column, expected: "Int64", found: text) }
            return value
        default:
            throw row.mismatch(column, expected: "an integer", found: row.typeName(column))
        }
    }
}

extension Int: PostgresDecodable {
    public static func decode(from row: PostgresRow, at column: Int) throws -> Int {
        let value = try Int64.decode(from: row, at: column)
        guard let result = Int(exactly: value) else { throw row.mismatch(column, expected: "Int", found: "\(value)") }
        return result
    }
}

extension Double: PostgresDecodable {
    public static func decode(from row: PostgresRow, at column: Int) throws -> Double {
        try row.requireNotNull(column, "double precision")
        switch row.typeOID(column) {
        case TypeOID.int2, TypeOID.int4, TypeOID.int8, TypeOID.float4, TypeOID.float8, TypeOID.numeric:
            let text = row.rawString(column)
            guard let value = Double(text) else { throw row.mismatch(column, expected: "Double", found: text) }
            return value
        default:
            throw row.mismatch(column, expected: "a number", found: row.typeName(column))
        }
    }
}

extension String: PostgresDecodable {
    public static func decode(from row: PostgresRow, at column: Int) throws -> String {
        try row.requireNotNull(column, "text")
        guard row.typeOID(column) != TypeOID.bytea else { throw row.mismatch(column, expected: "text", found: "bytea") }
        return row.rawString(column)
    }
}

extension Array: PostgresDecodable where Element == UInt8 {
    public static func decode(from row: PostgresRow, at column: Int) throws -> [UInt8] {
        try row.requireNotNull(column, "bytea")
        guard row.typeOID(column) == TypeOID.bytea else {
            throw row.mismatch(column, expected: "bytea", found: row.typeName(column))
        }
        return try row.decodeHexBytea(column)
    }
}

extension Bool: PostgresDecodable {
    public static func decode(from row: PostgresRow, at column: Int) throws -> Bool {
        try row.requireNotNull(column, "boolean")
        switch row.typeOID(column) {
        case TypeOID.bool:
            return row.rawString(column) == "t"
        case TypeOID.int2, TypeOID.int4, TypeOID.int8:
            return try Int64.decode(from: row, at: column) != 0
        default:
            throw row.mismatch(column, expected: "boolean", found: row.typeName(column))
        }
    }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public static func decode(from row: PostgresRow, at column: Int) throws -> Wrapped? {
        if row.isNull(column) { return nil }
        return try Wrapped.decode(from: row, at: column)
    }
}
