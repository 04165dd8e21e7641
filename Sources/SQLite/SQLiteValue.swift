/// A value stored in, or bound to, SQLite: one of its five storage classes.
public enum SQLiteValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// Wraps any bindable Swift value, e.g. `SQLiteValue(name)` or `SQLiteValue(optionalYear)`.
    public init(_ value: some SQLiteBindable) {
        self = value.sqliteValue
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The storage class of this value.
    public var type: SQLiteColumnType {
        switch self {
        case .null: .null
        case .integer: .integer
        case .real: .real
        case .text: .text
        case .blob: .blob
        }
    }
}

/// SQLite's storage classes, as reported for a column of the current row.
public enum SQLiteColumnType: String, Sendable {
    case integer = "INTEGER"
    case real = "REAL"
    case text = "TEXT"
    case blob = "BLOB"
    case null = "NULL"
}

extension SQLiteValue: ExpressibleByNilLiteral {
    public init(nilLiteral: ()) { self = .null }
}

extension SQLiteValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int64) { self = .integer(value) }
}

extension SQLiteValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .real(value) }
}

extension SQLiteValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
}

extension SQLiteValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}
