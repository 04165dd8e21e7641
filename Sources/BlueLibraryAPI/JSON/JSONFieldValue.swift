/// One JSON value as the field rules see it: scalars in full, arrays and objects by kind only.
///
/// No album, state or request field takes a container, so the rules never need a container's
/// contents — only its kind, to say what was sent instead ("must be a string, not an array").
/// Both readers produce it: `JSONFieldReader(_:)` from a `JSONSerialization` dictionary and the
/// archive's `JSONScanner`, so the two share every rule and every message.
public enum JSONFieldValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array
    case object

    /// The kind, as error messages name it ("got a number").
    public var kindDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// The text of a string value; `nil` for every other kind.
    public var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The value as an exact integer (see `JSONNumber.integer`); `nil` for booleans, strings,
    /// fractions and numbers too large to be exact.
    public var integer: Int? {
        if case .number(let number) = self { return number.integer }
        return nil
    }
}

/// A JSON number: its value as a `Double`, and its exact integer value when it has one.
public struct JSONNumber: Sendable, Equatable {
    /// The largest magnitude (exclusive) counted as an exact integer: below 2^53, so every
    /// integral double under it is exactly the integer that was written.
    public static let integerLimit = 9.0e15

    public var double: Double
    /// The integer value when the number is integral (`1992`, `1992.0`, `1.992e3`) and its
    /// magnitude is below `integerLimit`; `nil` otherwise.
    public var integer: Int?

    /// A number whose exact integer value is known (a literal with no fraction or exponent).
    public init(exactly value: Int64) {
        double = Double(value)
        integer = value.magnitude < UInt64(Self.integerLimit) ? Int(value) : nil
    }

    /// A number known only as a double.
    public init(_ double: Double) {
        self.double = double
        integer = double.rounded() == double && abs(double) < Self.integerLimit ? Int(exactly: double) : nil
    }

    public init(double: Double, integer: Int?) {
        self.double = double
        self.integer = integer
    }
}
