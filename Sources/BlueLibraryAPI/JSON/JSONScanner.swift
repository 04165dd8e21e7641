/// A JSON syntax error, located in the input.
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, e.g. "expected ',' or '}' after an object member".
    public var reason: String
    /// Byte offset of the offending byte (the input's length for a truncated document).
    public var offset: Int
    /// 1-based line (lines end at LF).
    public var line: Int
    /// 1-based column, counted in Unicode scalars.
    public var column: Int

    public var description: String { "\(reason) at line \(line), column \(column) (byte offset \(offset))" }
}

/// A pull parser for JSON text (RFC 8259, <https://www.rfc-editor.org/rfc/rfc8259>) over UTF-8
/// bytes, for documents too large to turn into `[String: Any]` first (a million-album archive).
///
/// The caller walks the document: `beginObject` / `nextKey` for objects, `beginArray` /
/// `nextElement` for arrays, `readString` / `readNumber` / `readValue` for values, `skipValue`
/// for anything it does not need, and `finish` to make sure nothing follows the document.
///
/// Rules: strict RFC 8259 — no comments, trailing commas, single quotes, leading zeros,
/// `NaN` or unescaped control characters; strings must be valid UTF-8 and `\u` escapes must
/// pair their surrogates. Nesting deeper than `maximumDepth` is refused rather than allowed to
/// exhaust the stack. Every error names the byte offset, line and column where it was found.
/// A UTF-8 byte order mark before the document is skipped.
///
/// The bytes must stay valid while the scanner is used (`Array.withUnsafeBufferPointer`).
public struct JSONScanner {
    /// The kind of the next value, from its first byte.
    public enum Kind: Sendable, Equatable {
        case object, array, string, number, bool, null
    }

    public static let defaultMaximumDepth = 512

    public let bytes: UnsafeBufferPointer<UInt8>
    public let maximumDepth: Int
    /// The offset of the next unread byte.
    public private(set) var position = 0
    /// How many objects and arrays are open.
    private(set) var depth = 0
    /// True right after `{` or `[`: the next member or element needs no comma.
    private var atContainerStart = false
    /// Reused while unescaping strings.
    private var scratch: [UInt8] = []
    /// Keys already seen: up to 16 ASCII bytes packed into two words, and their `String`.
    private var keyCache: [CachedKey] = []

    private struct CachedKey {
        var low: UInt64
        var high: UInt64
        var length: Int
        var string: String
    }

    public init(_ bytes: UnsafeBufferPointer<UInt8>, maximumDepth: Int = JSONScanner.defaultMaximumDepth) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { position = 3 }
    }

    // MARK: - Structure

    /// The kind of the next value, without consuming it.
    ///
    /// - Throws: at the end of the input or at a byte that cannot start a value.
    public mutating func peekKind() throws(JSONSyntaxError) -> Kind {
        skipWhitespace()
        guard position < bytes.count else { throw error("unexpected end of input; expected a value") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool
        case UInt8(ascii: "n"): return .null
        default: throw error("unexpected \(describeByte(at: position)); expected a value")
        }
    }

    /// Consumes `{`.
    public mutating func beginObject() throws(JSONSyntaxError) {
        try open(UInt8(ascii: "{"), "an object")
    }

    /// Consumes `[`.
    public mutating func beginArray() throws(JSONSyntaxError) {
        try open(UInt8(ascii: "["), "an array")
    }

    /// Moves to the next member of the open object: its key (the scanner is then at the value),
    /// or `nil` after consuming the closing `}`.
    public mutating func nextKey() throws(JSONSyntaxError) -> String? {
        skipWhitespace()
        guard position < bytes.count else { throw error("unexpected end of input inside an object; expected '}'") }
        let first = atContainerStart
        atContainerStart = false
        if bytes[position] == UInt8(ascii: "}") {
            position += 1
            depth -= 1
            return nil
        }
        if !first {
            guard bytes[position] == UInt8(ascii: ",") else {
                throw error("unexpected \(describeByte(at: position)) after an object member; expected ',' or '}'")
            }
            position += 1
            skipWhitespace()
        }
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
            if position >= bytes.count { throw error("unexpected end of input inside an object; expected a key") }
            throw error("unexpected \(describeByte(at: position)); expected a quoted key")
        }
        let key = try readKeyAtQuote()
        skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
            if position >= bytes.count { throw error("unexpected end of input after a key; expected ':'") }
            throw error("unexpected \(describeByte(at: position)) after a key; expected ':'")
        }
        position += 1
        return key
    }

    /// Moves to the next element of the open array: true when there is one (the scanner is
    /// then at it), false after consuming the closing `]`.
    public mutating func nextElement() throws(JSONSyntaxError) -> Bool {
        skipWhitespace()
        guard position < bytes.count else { throw error("unexpected end of input inside an array; expected ']'") }
        let first = atContainerStart
        atContainerStart = false
        if bytes[position] == UInt8(ascii: "]") {
            position += 1
            depth -= 1
            return false
        }
        if !first {
            guard bytes[position] == UInt8(ascii: ",") else {
                throw error("unexpected \(describeByte(at: position)) after an array element; expected ',' or ']'")
            }
            position += 1
        }
        return true
    }

    /// Why `bytes` is not one JSON document under RFC 8259 (nil when it is).
    public static func syntaxError(in bytes: [UInt8]) -> JSONSyntaxError? {
        bytes.withUnsafeBufferPointer { buffer -> JSONSyntaxError? in
            var scanner = JSONScanner(buffer)
            do throws(JSONSyntaxError) {
                try scanner.skipValue()
                try scanner.finish()
                return nil
            } catch {
                return error
            }
        }
    }

    /// Requires that only whitespace follows the document.
    public mutating func finish() throws(JSONSyntaxError) {
        skipWhitespace()
        guard position == bytes.count else {
            throw error("unexpected \(describeByte(at: position)) after the end of the document")
        }
    }

    // MARK: - Values

    /// Reads the next value: scalars in full, objects and arrays checked and skipped.
    public mutating func readValue() throws(JSONSyntaxError) -> JSONFieldValue {
        switch try peekKind() {
        case .string: return .string(try readStringAtQuote())
        case .number: return .number(try readNumberAtStart())
        case .bool: return .bool(try readLiteral())
        case .null:
            _ = try readLiteral()
            return .null
        case .object:
            try skipValue()
            return .object
        case .array:
            try skipValue()
            return .array
        }
    }

    /// Reads a string value.
    public mutating func readString() throws(JSONSyntaxError) -> String {
        guard try peekKind() == .string else { throw error("expected a string") }
        return try readStringAtQuote()
    }

    /// Reads a number value.
    public mutating func readNumber() throws(JSONSyntaxError) -> JSONNumber {
        guard try peekKind() == .number else { throw error("expected a number") }
        return try readNumberAtStart()
    }

    /// Checks the syntax of the next value and moves past it.
    public mutating func skipValue() throws(JSONSyntaxError) {
        switch try peekKind() {
        case .object:
            try beginObject()
            while try nextKey() != nil { try skipValue() }
        case .array:
            try beginArray()
            while try nextElement() { try skipValue() }
        case .string: try skipStringAtQuote()
        case .number: _ = try readNumberAtStart()
        case .bool, .null: _ = try readLiteral()
        }
    }

    // MARK: - Scalars

    private mutating func open(_ bracket: UInt8, _ what: String) throws(JSONSyntaxError) {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == bracket else {
            if position >= bytes.count { throw error("unexpected end of input; expected \(what)") }
            throw error("unexpected \(describeByte(at: position)); expected \(what)")
        }
        guard depth < maximumDepth else {
            throw error("objects and arrays are nested more than \(maximumDepth) deep")
        }
        position += 1
        depth += 1
        atContainerStart = true
    }

    /// `true`, `false` or `null` (as false) at `position`.
    private mutating func readLiteral() throws(JSONSyntaxError) -> Bool {
        if matches("true") {
            position += 4
            return true
        }
        if matches("false") {
            position += 5
            return false
        }
        if matches("null") {
            position += 4
            return false
        }
        throw error("unexpected \(describeByte(at: position)); expected true, false or null")
    }

    private func matches(_ word: StaticString) -> Bool {
        word.withUTF8Buffer { word in
            guard bytes.count - position >= word.count else { return false }
            for offset in 0..<word.count where bytes[position + offset] != word[offset] { return false }
            return true
        }
    }

    /// A number at `position` (RFC 8259 §6). Integers without fraction or exponent that fit
    /// in `Int64` are read exactly; anything else goes through `Double`.
    private mutating func readNumberAtStart() throws(JSONSyntaxError) -> JSONNumber {
        let start = position
        var index = position
        let count = bytes.count
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < count, isDigit(bytes[index]) else {
            position = index
            if index >= count { throw error("unexpected end of input in a number; expected a digit") }
            throw error("unexpected \(describeByte(at: index)) in a number; expected a digit")
        }
        var magnitude: UInt64 = 0
        var digitCount = 0
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < count, isDigit(bytes[index]) {
                position = index - 1
                throw error("a number must not have a leading zero")
            }
        } else {
            while index < count, isDigit(bytes[index]) {
                if digitCount < 19 { magnitude = magnitude &* 10 &+ UInt64(bytes[index] &- 48) }
                digitCount += 1
                index += 1
            }
        }
        var integral = true
        if index < count, bytes[index] == UInt8(ascii: ".") {
            integral = false
            index += 1
            index = try digits(from: index, after: "'.'")
        }
        if index < count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            integral = false
            index += 1
            if index < count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            index = try digits(from: index, after: "an exponent")
        }
        position = index
        if integral, digitCount <= 19 {
            if !negative, magnitude <= UInt64(Int64.max) { return JSONNumber(exactly: Int64(magnitude)) }
            if negative, magnitude <= UInt64(Int64.max) + 1 { return JSONNumber(exactly: Int64(truncatingIfNeeded: 0 &- magnitude)) }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        // The grammar was checked above, so `Double` can only fail on a value it cannot hold;
        // it does not fail on one too large, but gives infinity (`1e400`), which JSON has not.
        guard let double = Double(text), double.isFinite else {
            position = start
            throw error("the number \(text.prefix(40)) cannot be represented")
        }
        return JSONNumber(double)
    }

    /// Skips one or more digits starting at `index`; returns the offset after them.
    private mutating func digits(from index: Int, after what: String) throws(JSONSyntaxError) -> Int {
        var index = index
        guard index < bytes.count, isDigit(bytes[index]) else {
            position = index
            if index >= bytes.count { throw error("unexpected end of input in a number; expected a digit after \(what)") }
            throw error("unexpected \(describeByte(at: index)) in a number; expected a digit after \(what)")
        }
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        return index
    }

    /// The string at `position` (which is its opening quote), unescaped.
    private mutating func readStringAtQuote() throws(JSONSyntaxError) -> String {
        let start = position + 1
        var index = start
        let count = bytes.count
        // Fast path: no escapes, so the bytes between the quotes are the string.
        while true {
            index = skipPlainASCII(from: index)
            guard index < count else { break }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                position = index + 1
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") {
                scratch.removeAll(keepingCapacity: true)
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
                return try readEscapedString(from: index, stringStart: start - 1)
            }
            index = try nextCharacter(at: index, byte: byte)
        }
        position = count
        throw error("unexpected end of input inside a string that starts at byte offset \(start - 1); expected '\"'")
    }

    /// The offset of the first byte from `index` on that is not plain ASCII text (a quote, a
    /// backslash, a control character or a non-ASCII byte), looking at eight bytes at a time;
    /// it may stop a little early, never late.
    @inline(__always)
    private func skipPlainASCII(from index: Int) -> Int {
        var index = index
        guard let base = bytes.baseAddress else { return index }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while index &+ 8 <= bytes.count {
            let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
            let quotes = word ^ (ones &* 0x22)
            let backslashes = word ^ (ones &* 0x5C)
            // (x - 1) & ~x has bit 7 set in some byte exactly when x has a zero byte, and
            // (x - n) & ~x when a byte of x is below n (n <= 128).
            let special = ((quotes &- ones) & ~quotes) | ((backslashes &- ones) & ~backslashes)
                | ((word &- ones &* 0x20) & ~word) | word
            if special & highs != 0 { break }
            index &+= 8
        }
        return index
    }

    /// A key at `position` (its opening quote). Short keys without escapes are looked up in
    /// `keyCache` first: an archive repeats the same eight keys a million times, and handing
    /// out the same `String` again costs less than building it from bytes each time.
    private mutating func readKeyAtQuote() throws(JSONSyntaxError) -> String {
        let start = position + 1
        let limit = min(bytes.count, start + 16)
        var index = start
        while index < limit {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { break }
            // Only plain ASCII is cached; anything else takes the general path.
            guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { return try readStringAtQuote() }
            index += 1
        }
        guard index < limit, bytes[index] == UInt8(ascii: "\"") else { return try readStringAtQuote() }
        let length = index - start
        var packed: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &packed) { packed in
            packed.copyMemory(from: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[start..<index]))
        }
        let found = keyCache.withUnsafeBufferPointer { cache in
            cache.firstIndex { $0.length == length && $0.low == packed.0 && $0.high == packed.1 }
        }
        if let found {
            position = index + 1
            return keyCache[found].string
        }
        let key = try readStringAtQuote()
        if keyCache.count < 64 { keyCache.append(CachedKey(low: packed.0, high: packed.1, length: length, string: key)) }
        return key
    }

    /// Continues a string whose first escape is at `index`, building it in `scratch`.
    private mutating func readEscapedString(from index: Int, stringStart: Int) throws(JSONSyntaxError) -> String {
        var index = index
        let count = bytes.count
        while index < count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                position = index + 1
                return String(decoding: scratch, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") {
                index = try unescape(at: index)
                continue
            }
            let next = try nextCharacter(at: index, byte: byte)
            scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[index..<next]))
            index = next
        }
        position = count
        throw error("unexpected end of input inside a string that starts at byte offset \(stringStart); expected '\"'")
    }

    /// Moves past the string at `position` without building it.
    private mutating func skipStringAtQuote() throws(JSONSyntaxError) {
        let start = position
        var index = position + 1
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                position = index + 1
                return
            }
            if byte == UInt8(ascii: "\\") {
                scratch.removeAll(keepingCapacity: true)
                index = try unescape(at: index)
                continue
            }
            index = try nextCharacter(at: index, byte: byte)
        }
        position = bytes.count
        throw error("unexpected end of input inside a string that starts at byte offset \(start); expected '\"'")
    }

    /// The offset after the unescaped character starting with `byte` at `index`: refuses
    /// control characters and invalid UTF-8 (overlong forms, surrogates, beyond U+10FFFF).
    @inline(__always)
    private mutating func nextCharacter(at index: Int, byte: UInt8) throws(JSONSyntaxError) -> Int {
        if byte >= 0x20 && byte < 0x80 { return index + 1 }
        if byte < 0x20 {
            position = index
            throw error("control character U+\(hex(UInt32(byte), width: 4)) must be escaped in a string (as \\n, \\t or \\u\(hex(UInt32(byte), width: 4)))")
        }
        return try utf8Sequence(at: index, lead: byte)
    }

    /// Validates the multi-byte UTF-8 sequence at `index`; returns the offset after it.
    private mutating func utf8Sequence(at index: Int, lead: UInt8) throws(JSONSyntaxError) -> Int {
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; secondRange = 0x80...0x9F
        case 0xF0: length = 4; secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; secondRange = 0x80...0x8F
        default:
            position = index
            throw error("invalid UTF-8: byte 0x\(hex(UInt32(lead), width: 2)) cannot start a character")
        }
        for offset in 1..<length {
            let at = index + offset
            guard at < bytes.count else {
                position = at
                throw error("invalid UTF-8: the input ends inside a character")
            }
            let byte = bytes[at]
            guard offset == 1 ? secondRange.contains(byte) : (byte & 0xC0 == 0x80) else {
                position = at
                throw error("invalid UTF-8: byte 0x\(hex(UInt32(byte), width: 2)) cannot continue the character that starts at byte offset \(index)")
            }
        }
        return index + length
    }

    /// Appends the escape at `index` (a backslash) to `scratch`; returns the offset after it.
    private mutating func unescape(at index: Int) throws(JSONSyntaxError) -> Int {
        guard index + 1 < bytes.count else {
            position = index + 1
            throw error("unexpected end of input in an escape sequence")
        }
        let simple: UInt8
        switch bytes[index + 1] {
        case UInt8(ascii: "\""): simple = 0x22
        case UInt8(ascii: "\\"): simple = 0x5C
        case UInt8(ascii: "/"): simple = 0x2F
        case UInt8(ascii: "b"): simple = 0x08
        case UInt8(ascii: "f"): simple = 0x0C
        case UInt8(ascii: "n"): simple = 0x0A
        case UInt8(ascii: "r"): simple = 0x0D
        case UInt8(ascii: "t"): simple = 0x09
        case UInt8(ascii: "u"):
            var unit = try hexQuad(at: index + 2)
            var end = index + 6
            if (0xDC00...0xDFFF).contains(unit) {
                position = index
                throw error("\\u\(hex(unit, width: 4)) is a low surrogate without a high surrogate before it")
            }
            if (0xD800...0xDBFF).contains(unit) {
                guard end + 1 < bytes.count, bytes[end] == UInt8(ascii: "\\"), bytes[end + 1] == UInt8(ascii: "u") else {
                    position = index
                    throw error("\\u\(hex(unit, width: 4)) is a high surrogate without a low surrogate (\\uDC00 to \\uDFFF) after it")
                }
                let low = try hexQuad(at: end + 2)
                guard (0xDC00...0xDFFF).contains(low) else {
                    position = end
                    throw error("\\u\(hex(unit, width: 4)) is a high surrogate but \\u\(hex(low, width: 4)) after it is not a low surrogate")
                }
                unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                end += 6
            }
            appendUTF8(unit)
            return end
        default:
            position = index
            throw error("invalid escape sequence \\\(describeByte(at: index + 1, quoted: false)); use \\\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t or \\uXXXX")
        }
        scratch.append(simple)
        return index + 2
    }

    /// The four hex digits at `index`.
    private mutating func hexQuad(at index: Int) throws(JSONSyntaxError) -> UInt32 {
        var value: UInt32 = 0
        for at in index..<index + 4 {
            guard at < bytes.count else {
                position = at
                throw error("unexpected end of input in a \\u escape; expected 4 hex digits")
            }
            let byte = bytes[at]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - 48
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - 87
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - 55
            default:
                position = at
                throw error("unexpected \(describeByte(at: at)) in a \\u escape; expected 4 hex digits")
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case 0..<0x80:
            scratch.append(UInt8(scalar))
        case 0x80..<0x800:
            scratch.append(UInt8(0xC0 | scalar >> 6))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            scratch.append(UInt8(0xE0 | scalar >> 12))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        default:
            scratch.append(UInt8(0xF0 | scalar >> 18))
            scratch.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    // MARK: - Helpers

    @inline(__always)
    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    @inline(__always)
    private func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10
    }

    /// Names the byte at `offset` for a message: `'x'`, `byte 0xFF`, or `end of input`.
    private func describeByte(at offset: Int, quoted: Bool = true) -> String {
        guard offset < bytes.count else { return "end of input" }
        let byte = bytes[offset]
        if byte > 0x20 && byte < 0x7F {
            let character = String(UnicodeScalar(byte))
            return quoted ? "'\(character)'" : character
        }
        return "byte 0x\(hex(UInt32(byte), width: 2))"
    }

    private func hex(_ value: UInt32, width: Int) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    /// An error at `position`, with its line and column.
    private func error(_ reason: String) -> JSONSyntaxError {
        let offset = min(position, bytes.count)
        var line = 1
        var column = 1
        for byte in bytes[0..<offset] {
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return JSONSyntaxError(reason: reason, offset: offset, line: line, column: column)
    }
}
