import Foundation

/// Turns raw request bytes into a JSON object dictionary, or a `BodyError.malformed` that
/// says what is wrong with the syntax.
///
/// `JSONSerialization` rather than `Decodable` on purpose: with the untyped dictionary we can
/// check every field ourselves, report all wrong types and unknown keys at once, and never
/// turn a type mismatch into an opaque `DecodingError`.
public enum JSONObjectParser {
    /// Parses `bytes` as a JSON value.
    ///
    /// - Parameter what: how to name the input in messages ("the request body", "the archive").
    /// - Throws: `BodyError.malformed` for empty input or a syntax error.
    public static func value(from bytes: [UInt8], what: String) throws(BodyError) -> Any {
        guard bytes.contains(where: { !isWhitespace($0) }) else {
            throw .malformed("\(what) is empty; send a JSON object")
        }
        // The syntax is judged by the archive's strict RFC 8259 scanner, so every body is held
        // to the same rules (JSONSerialization alone accepts `{"a": 1,}` and UTF-16) and the
        // message names the line and column.
        if let syntaxError = JSONScanner.syntaxError(in: bytes) {
            throw .malformed("\(what) is not valid JSON (\(syntaxError)); check quotes, commas and brackets")
        }
        do {
            return try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
        } catch {
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String
            throw .malformed("\(what) is not valid JSON" + (detail.map { " (\($0))" } ?? "")
                + "; check quotes, commas and brackets")
        }
    }

    /// Parses `bytes` and requires a JSON object at the top level.
    ///
    /// - Throws: `BodyError.malformed` for a syntax error or a non-object value.
    public static func object(from bytes: [UInt8], what: String, example: String) throws(BodyError) -> [String: Any] {
        let value = try value(from: bytes, what: what)
        guard let object = value as? [String: Any] else {
            throw .malformed("\(what) must be a JSON object like \(example), not \(JSONValueKind.describe(value))")
        }
        return object
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}

/// Reads `JSONSerialization` values as `JSONFieldValue`s, the form the field rules check.
public enum JSONValueKind {
    /// The field value of a parsed value: scalars in full, containers by kind.
    public static func fieldValue(_ value: Any) -> JSONFieldValue {
        switch value {
        case is NSNull: return .null
        case let string as String: return .string(string)
        case let number as NSNumber:
            return isBoolean(number) ? .bool(number.boolValue) : .number(JSONNumber(double: number.doubleValue, integer: integer(number)))
        case is [Any]: return .array
        default: return .object // `JSONSerialization` makes nothing else
        }
    }

    /// Names the kind of a parsed value for error messages ("got a number").
    public static func describe(_ value: Any) -> String {
        fieldValue(value).kindDescription
    }

    /// Whether a parsed number is JSON `true`/`false`. Not `value is Bool`: Foundation
    /// bridges any `NSNumber` holding 0 or 1 to `Bool`, so `1` would look like `true`.
    /// `JSONSerialization` makes booleans with the C type `char` ("c") and numbers never.
    public static func isBoolean(_ number: NSNumber) -> Bool {
        number.objCType.pointee == CChar(UInt8(ascii: "c"))
    }

    /// The number as an exact integer: JSON numbers with an integral value (`1992`, `1992.0`);
    /// `nil` for fractions and numbers of `JSONNumber.integerLimit` or more.
    private static func integer(_ number: NSNumber) -> Int? {
        let double = number.doubleValue
        guard double.rounded() == double, abs(double) < JSONNumber.integerLimit else { return nil }
        return number as? Int ?? Int(exactly: double)
    }
}
