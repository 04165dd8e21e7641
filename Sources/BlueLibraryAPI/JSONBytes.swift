/// Appends JSON keys and raw text to a byte buffer by hand; string values go through
/// Essentials' `JSONString` (the one escaper) and dates through `Timestamp.appendQuoted`.
///
/// Used where `JSONEncoder` would be too slow or would need the whole value at once: the
/// streaming archive export writes a million albums through it. Output is compact UTF-8 with a
/// fixed key order, so the same album always gives the same bytes.
public enum JSONBytes {
    /// Appends `"key":` (the key must not need escaping).
    public static func appendKey(_ key: StaticString, to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { buffer.append(contentsOf: $0) }
        buffer.append(UInt8(ascii: "\""))
        buffer.append(UInt8(ascii: ":"))
    }

    public static func appendRaw(_ text: String, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: text.utf8)
    }
}
