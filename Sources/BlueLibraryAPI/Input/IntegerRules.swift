/// The ranges of the integers clients send, and the one rule for reading an integer from JSON.
///
/// JSON has one number type: `2`, `2.0` and `2e0` are the same number, and JSON Schema's
/// `type: integer` (2020-12) accepts each of them. So a JSON integer field takes any number
/// with an integral value and refuses fractions, the same in every body and in the archive.
/// Query and path integers are text: decimal digits only (see `QueryParameters.integer`).
public enum IntegerRules {
    /// An album's position in a library or view (`index`, `currentAlbumIndex`, `/albums/at/{i}`):
    /// 0 to 2^31 - 1, the range `offset` has always had. No library holds more albums.
    public static let positions = 0...Int(Int32.max)
    /// A library version (`since`, `Last-Event-ID`): 0 to 2^63 - 1.
    public static let versions = 0...Int(Int64.max)
    /// A version in a JSON document (an archive's `version`): below `JSONNumber.integerLimit`,
    /// the largest integer a JSON number is read exactly as.
    public static let documentVersions = 0...(Int(JSONNumber.integerLimit) - 1)

    /// What a field in `range` must be: "a whole number from 0 to 2147483647".
    public static func wholeNumber(_ range: ClosedRange<Int>) -> String {
        "a whole number from \(range.lowerBound) to \(range.upperBound)"
    }

    /// How a refused value is quoted in a message: a number as written (`1.5`, `1e+18`), any
    /// other value by its kind (`a string`).
    public static func describe(_ value: JSONFieldValue) -> String {
        guard case .number(let number) = value else { return value.kindDescription }
        if let integer = number.integer { return String(integer) }
        return number.double.description
    }
}

extension JSONFieldReader {
    /// An integer field within `range`, else `nil` after recording "`key` must be a whole
    /// number from A to B (got X)". Integral numbers only (`2.0` is 2); `null`, strings,
    /// booleans, fractions and numbers outside the range are refused alike.
    public mutating func integer(_ key: String, _ value: JSONFieldValue, in range: ClosedRange<Int>) -> Int? {
        if let number = value.integer, range.contains(number) { return number }
        fail(key, "must be " + IntegerRules.wholeNumber(range) + " (got \(IntegerRules.describe(value)))")
        return nil
    }

    /// A position (`index`): like `integer(_:_:in:)` with `IntegerRules.positions`, except that
    /// a negative whole number is returned as it is, for the caller to refuse as
    /// `BodyError.negativeIndex` (400, as it always was).
    public mutating func position(_ key: String, _ value: JSONFieldValue) -> Int? {
        if let number = value.integer, number < 0 { return number }
        return integer(key, value, in: IntegerRules.positions)
    }
}
