/// Appends JSON text to a byte buffer by hand.
///
/// Used where `JSONEncoder` would be too slow or would need the whole value at once: the
/// streaming archive export writes a million albums through it. Output is compact UTF-8 with a
/// fixed key order, so the same album always gives the same bytes.
enum JSONBytes {
    /// Appends `value` as a JSON string literal (RFC 8259 §7): quotes, backslashes and control
    /// characters are escaped; everything else is copied as UTF-8.
    static func appendString(_ value: String, to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): buffer.append(contentsOf: [92, 34])
            case UInt8(ascii: "\\"): buffer.append(contentsOf: [92, 92])
            case 0x0A: buffer.append(contentsOf: [92, UInt8(ascii: "n")])
            case 0x0D: buffer.append(contentsOf: [92, UInt8(ascii: "r")])
            case 0x09: buffer.append(contentsOf: [92, UInt8(ascii: "t")])
            case 0x00..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                buffer.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 15)]])
            default: buffer.append(byte)
            }
        }
        buffer.append(UInt8(ascii: "\""))
    }

    /// Appends `"key":` (the key must not need escaping).
    static func appendKey(_ key: StaticString, to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { buffer.append(contentsOf: $0) }
        buffer.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
    }

    static func appendRaw(_ text: String, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: text.utf8)
    }

    static func appendOptionalString(_ value: String?, to buffer: inout [UInt8]) {
        if let value { appendString(value, to: &buffer) } else { appendRaw("null", to: &buffer) }
    }
}
