import Foundation

/// A body that names one position: `{"index": 2}` (move, delete by index), or — for the
/// tutorial app's `deleteAlbum` call, which posted the bare number — plain text `2`.
///
/// The plain number follows the JSON rule of every integer field (`IntegerRules`): `2`, `2.0`
/// and `2e0` are the same, a fraction is not a position. Leading zeros (`02`) are accepted as
/// the tutorial's parser did.
public enum IndexRequest {
    /// - Parameter allowPlainText: accept a bare decimal number as the whole body.
    /// - Returns: the index; `nil` when a JSON object has no `index` key.
    /// - Throws: `.malformed` for syntax, `.invalid` for a bad `index` (not an integral number,
    ///   `null`, above `IntegerRules.positions`) or unknown keys, `.negativeIndex` for a
    ///   negative index.
    public static func decode(json bytes: [UInt8], allowPlainText: Bool) throws(BodyError) -> Int? {
        let trimmed = bytes.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        var reader: JSONFieldReader
        if allowPlainText, let first = trimmed.first, first != UInt8(ascii: "{") {
            let text = String(decoding: trimmed, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            let number: JSONFieldValue
            if let index = Int(text), !text.hasPrefix("+") {
                number = .number(JSONNumber(exactly: Int64(index)))
            } else if isJSONNumber(text), let parsed = try? JSONObjectParser.value(from: Array(text.utf8), what: "the request body"),
                      case let .number(value) = JSONValueKind.fieldValue(parsed) {
                number = .number(value)
            } else {
                throw .malformed("send the index as a plain number like 2, or as {\"index\": 2} (got \"\(text.prefix(40))\")")
            }
            reader = JSONFieldReader(members: [JSONMember(key: "index", value: number)])
        } else {
            reader = JSONFieldReader(try JSONObjectParser.object(from: bytes, what: "the request body", example: #"{"index": 2}"#))
            reader.rejectUnknownKeys(known: ["index"])
        }
        var index: Int?
        if let value = reader.nonNullValue("index", expected: IntegerRules.wholeNumber(IntegerRules.positions)) {
            index = reader.position("index", value)
        }
        guard reader.errors.isEmpty else { throw .invalid(ValidationFailure(reader.errors)) }
        if let index, index < 0 { throw .negativeIndex(index) }
        return index
    }

    /// Whether `text` is one JSON number (RFC 8259 §6): `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    public static func isJSONNumber(_ text: String) -> Bool {
        var bytes = Array(text.utf8)[...]
        func digits() -> Int {
            let count = bytes.prefix { $0 >= 0x30 && $0 <= 0x39 }.count
            bytes = bytes.dropFirst(count)
            return count
        }
        if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        if bytes.first == UInt8(ascii: "0") {
            bytes = bytes.dropFirst()
        } else if digits() == 0 {
            return false
        }
        if bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            guard digits() > 0 else { return false }
        }
        if bytes.first == UInt8(ascii: "e") || bytes.first == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            if bytes.first == UInt8(ascii: "+") || bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
            guard digits() > 0 else { return false }
        }
        return bytes.isEmpty
    }
}
