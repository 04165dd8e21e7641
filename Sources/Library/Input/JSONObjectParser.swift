import Foundation

/// Turns raw request bytes into a JSON object dictionary, or a `LibraryError.malformed` that
/// says what is wrong with the syntax.
///
/// `JSONSerialization` rather than `Decodable` on purpose: with the untyped dictionary we can
/// check every field ourselves, report all wrong types and unknown keys at once, and never
/// turn a type mismatch into an opaque `DecodingError`.
enum JSONObjectParser {
    /// Parses `bytes` as a JSON value.
    ///
    /// - Parameter what: how to name the input in messages ("the request body", "the archive").
    /// - Throws: `LibraryError.malformed` for empty input or a syntax error.
    static func value(from bytes: [UInt8], what: String) throws(LibraryError) -> Any {
        guard bytes.contains(where: { !isWhitespace($0) }) else {
            throw .malformed("\(what) is empty; send a JSON object")
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
    /// - Throws: `LibraryError.malformed` for a syntax error or a non-object value.
    static func object(from bytes: [UInt8], what: String, example: String) throws(LibraryError) -> [String: Any] {
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

/// Names the kind of a `JSONSerialization` value for error messages ("got a number").
enum JSONValueKind {
    static func describe(_ value: Any) -> String {
        switch value {
        case is NSNull: return "null"
        case is String: return "a string"
        case let number as NSNumber: return isBoolean(number) ? "a boolean" : "a number"
        case is [Any]: return "an array"
        case is [String: Any]: return "an object"
        default: return "an unsupported value"
        }
    }

    /// Whether a parsed number is JSON `true`/`false`. Not `value is Bool`: Foundation
    /// bridges any `NSNumber` holding 0 or 1 to `Bool`, so `1` would look like `true`.
    /// `JSONSerialization` makes booleans with the C type `char` ("c") and numbers never.
    static func isBoolean(_ number: NSNumber) -> Bool {
        number.objCType.pointee == CChar(UInt8(ascii: "c"))
    }

    /// The value as an exact integer: JSON numbers with an integral value (`1992`, `1992.0`);
    /// `nil` for booleans (which `NSNumber` would otherwise bridge to 0/1), fractions and
    /// numbers out of `Int` range.
    static func integer(_ value: Any) -> Int? {
        guard let number = value as? NSNumber, !isBoolean(number) else { return nil }
        let double = number.doubleValue
        guard double.rounded() == double, abs(double) < 9.0e15 else { return nil }
        return number as? Int ?? Int(exactly: double)
    }
}
