/// JSON string literals (RFC 8259 §7), written straight into a byte buffer: the one escaper in
/// the project (album bodies, archive exports, problem details, logs and events all use it).
///
/// `"` and `\` are escaped, as are the control characters U+0000...U+001F (`\n`, `\r`, `\t` by
/// name, the others as `\u00xx` with lowercase hex); every other byte of the UTF-8 is copied as
/// it is, so the same text always gives the same bytes. Runs that need no escaping are copied in
/// one piece and nothing is allocated beyond the buffer's own growth: this is on the list-page
/// and export hot paths.
///
/// ```swift
/// var body: [UInt8] = []
/// JSONString.append("say \"hi\"\n", to: &body)   // "say \"hi\"\n" with the quotes
/// ```
public enum JSONString {
    /// Appends `value` as a quoted JSON string literal.
    public static func append(_ value: String, to buffer: inout [UInt8]) {
        buffer.append(quote)
        var value = value
        value.withUTF8 { appendEscaped($0, to: &buffer) }
        buffer.append(quote)
    }

    /// Appends `value` as a quoted JSON string literal, or `null`.
    public static func append(_ value: String?, to buffer: inout [UInt8]) {
        if let value {
            append(value, to: &buffer)
        } else {
            buffer.append(contentsOf: "null".utf8)
        }
    }

    /// `value` as a quoted JSON string literal (for code that builds text, not bytes).
    public static func quoted(_ value: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(value.utf8.count + 2)
        append(value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `value` as a quoted JSON string literal made of printable ASCII only: besides what
    /// `quoted(_:)` escapes, DEL and every character outside ASCII is written `\uXXXX` (a
    /// surrogate pair above U+FFFF). For text a client chose and the server quotes back (an
    /// unknown `Last-Event-ID`): it reads the same whatever charset the reader assumes.
    public static func quotedASCII(_ value: String) -> String {
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar.value {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            case 0x20..<0x7F: out.unicodeScalars.append(scalar)
            case 0x10000...:
                let offset = scalar.value - 0x10000
                out += unicodeEscape(0xD800 + (offset >> 10)) + unicodeEscape(0xDC00 + (offset & 0x3FF))
            default: out += unicodeEscape(scalar.value)
            }
        }
        return out + "\""
    }

    private static func unicodeEscape(_ unit: UInt32) -> String {
        let hex = String(unit, radix: 16)
        return "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
    }

    /// Appends the escaped form of UTF-8 `bytes`, without the quotes.
    public static func appendEscaped(_ bytes: UnsafeBufferPointer<UInt8>, to buffer: inout [UInt8]) {
        var runStart = 0
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte >= 0x20, byte != quote, byte != backslash {
                index += 1
                continue
            }
            if runStart < index {
                buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
            }
            buffer.append(backslash)
            switch byte {
            case quote, backslash: buffer.append(byte)
            case 0x0A: buffer.append(UInt8(ascii: "n"))
            case 0x0D: buffer.append(UInt8(ascii: "r"))
            case 0x09: buffer.append(UInt8(ascii: "t"))
            default:
                buffer.append(UInt8(ascii: "u"))
                buffer.append(UInt8(ascii: "0"))
                buffer.append(UInt8(ascii: "0"))
                buffer.append(hexDigit(byte >> 4))
                buffer.append(hexDigit(byte & 0xF))
            }
            index += 1
            runStart = index
        }
        if runStart < bytes.count {
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<bytes.count]))
        }
    }

    private static let quote = UInt8(ascii: "\"")
    private static let backslash = UInt8(ascii: "\\")

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}
