import Foundation

/// A body that names one position: `{"index": 2}` (move, delete by index), or — for the
/// tutorial app's `deleteAlbum` call, which posted the bare number — plain text `2`.
public enum IndexRequest {
    /// - Parameter allowPlainText: accept a bare decimal number as the whole body.
    /// - Returns: the index; `nil` when a JSON object has no `index` key.
    /// - Throws: `.malformed` for syntax, `.invalid` for a bad `index` or unknown keys,
    ///   `.indexOutOfRange` for a negative index.
    public static func decode(json bytes: [UInt8], allowPlainText: Bool) throws(LibraryError) -> Int? {
        let trimmed = bytes.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        if allowPlainText, let first = trimmed.first, first != UInt8(ascii: "{") {
            let text = String(decoding: trimmed, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard let index = Int(text), !text.hasPrefix("+") else {
                throw .malformed("send the index as a plain number like 2, or as {\"index\": 2} (got \"\(text.prefix(40))\")")
            }
            guard index >= 0 else { throw .indexOutOfRange(index: index, count: 0) }
            return index
        }
        let object = try JSONObjectParser.object(from: bytes, what: "the request body", example: #"{"index": 2}"#)
        var reader = JSONFieldReader(object)
        reader.rejectUnknownKeys(known: ["index"])
        var index: Int?
        if case .value(let value) = reader.field("index") {
            index = value.integer
            if index == nil {
                reader.fail("index", "must be an integer position starting at 0 (got \(value.kindDescription))")
            }
        }
        guard reader.errors.isEmpty else { throw .invalid(ValidationFailure(reader.errors)) }
        if let index, index < 0 { throw .indexOutOfRange(index: index, count: 0) }
        return index
    }
}
