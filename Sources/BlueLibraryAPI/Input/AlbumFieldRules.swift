import Foundation

/// The rules for each user-editable album field, shared by create, patch and archive import
/// so the three can never disagree.
public enum AlbumFieldRules {
    /// Text fields (title, artist, genre) are at most this many characters after trimming.
    public static let maximumTextLength = AlbumFieldLimits.textLength.upperBound
    /// `coverUrl` is at most this many characters (a common URL limit of browsers and proxies).
    public static let maximumURLLength = AlbumFieldLimits.maximumURLLength
    public static let yearRange = AlbumFieldLimits.yearRange

    public static let yearMessage = "must be an integer between 1000 and 9999, or a 4-digit string like \"1992\""
    public static let coverURLMessage = "must be an absolute http or https URL like \"https://example.com/cover.png\", or null"

    /// Text never holds U+0000 (NUL): PostgreSQL cannot store it, and no title needs it, so
    /// both stores refuse it alike.
    public static let nulMessage = "must not contain the NUL character (U+0000)"

    public static func containsNUL(_ text: String) -> Bool {
        // Over the contiguous UTF-8 bytes: `utf8.contains` steps an index per byte, a
        // measurable cost when an import checks four texts of each of a million albums.
        var text = text
        return text.withUTF8 { $0.contains(0) }
    }

    /// Trims surrounding whitespace and checks the length rule.
    ///
    /// Rule: stored text is trimmed, so `"  Sting "` and `"Sting"` are the same artist, and a
    /// value of only spaces counts as empty.
    public static func text(_ key: String, _ value: JSONFieldValue, reader: inout JSONFieldReader) -> String? {
        guard let raw = reader.string(key, value, hint: "a string") else { return nil }
        return text(key, raw, errors: &reader)
    }

    public static func text(_ key: String, _ raw: String, errors reader: inout JSONFieldReader) -> String? {
        if containsNUL(raw) {
            reader.fail(key, nulMessage)
            return nil
        }
        let trimmed = trimmed(raw)
        if trimmed.isEmpty {
            reader.fail(key, "must not be empty or only whitespace")
            return nil
        }
        if exceeds(trimmed, maximumTextLength) {
            reader.fail(key, "must be at most \(maximumTextLength) characters (got \(trimmed.count))")
            return nil
        }
        return trimmed
    }

    /// A year given as a JSON integer or as a 4-digit string ("1992", as the tutorial stored
    /// it); the result is always an integer.
    public static func year(_ key: String, _ value: JSONFieldValue, reader: inout JSONFieldReader) -> Int? {
        if case .string(let string) = value {
            let digits = string.trimmingCharacters(in: .whitespaces)
            guard digits.utf8.count == 4, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                  let year = Int(digits), yearRange.contains(year) else {
                reader.fail(key, yearMessage + " (got \"\(string)\")")
                return nil
            }
            return year
        }
        guard let number = value.integer else {
            reader.fail(key, yearMessage + " (got \(IntegerRules.describe(value)))")
            return nil
        }
        return year(key, number, reader: &reader)
    }

    public static func year(_ key: String, _ year: Int, reader: inout JSONFieldReader) -> Int? {
        guard yearRange.contains(year) else {
            reader.fail(key, yearMessage + " (got \(year))")
            return nil
        }
        return year
    }

    public static func coverURL(_ key: String, _ value: JSONFieldValue, reader: inout JSONFieldReader) -> String? {
        guard let raw = reader.string(key, value, hint: "a string") else { return nil }
        return coverURL(key, raw, reader: &reader)
    }

    /// Rule: an absolute `http`/`https` URL with a host, at most 2048 characters. Other schemes
    /// are refused because the cover fetcher (curl) must never be pointed at `file:` or `ftp:`.
    public static func coverURL(_ key: String, _ raw: String, reader: inout JSONFieldReader) -> String? {
        if containsNUL(raw) {
            reader.fail(key, nulMessage)
            return nil
        }
        let trimmed = trimmed(raw)
        if exceeds(trimmed, maximumURLLength) {
            reader.fail(key, "must be at most \(maximumURLLength) characters (got \(trimmed.count))")
            return nil
        }
        guard isPlainWebURL(trimmed) || isWebURL(trimmed) else {
            reader.fail(key, coverURLMessage + " (got \"\(raw)\")")
            return nil
        }
        return trimmed
    }

    /// The cover URL rule, as `URL` sees the text: it parses, its scheme is http or https,
    /// and it has a host.
    public static func isWebURL(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty else { return false }
        return true
    }

    /// A shortcut for the usual shape, `http(s)://host.name/plain/path.png` in plain ASCII,
    /// which `isWebURL` always accepts (a test checks this); anything else — ports, user
    /// info, `%`, `?`, `#`, upper-case schemes, non-ASCII — is left to `isWebURL`.
    /// Parsing a URL costs more than the rest of an album's checks together.
    public static func isPlainWebURL(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var index: Int
            if bytes.starts(with: "https://".utf8) {
                index = 8
            } else if bytes.starts(with: "http://".utf8) {
                index = 7
            } else {
                return false
            }
            // Host: a letter or digit, then letters, digits, '-' and '.'.
            guard index < bytes.count, isLetterOrDigit(bytes[index]) else { return false }
            while index < bytes.count, bytes[index] != UInt8(ascii: "/") {
                let byte = bytes[index]
                guard isLetterOrDigit(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") else { return false }
                index += 1
            }
            // Path: RFC 3986 unreserved and sub-delims characters, ':', '@' and '/'.
            while index < bytes.count {
                let byte = bytes[index]
                guard isLetterOrDigit(byte) || isPlainPathSymbol(byte) else { return false }
                index += 1
            }
            return true
        }
    }

    /// `-._~!$&'()*+,;=:@/`
    private static func isPlainPathSymbol(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "!"),
             UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="),
             UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "/"):
            return true
        default:
            return false
        }
    }

    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
    }

    /// `raw` without surrounding whitespace and newlines: `trimmingCharacters(in:
    /// .whitespacesAndNewlines)`, but without a Foundation round trip when neither end can be
    /// trimmed (nearly always, and a million-album import checks four texts per album).
    public static func trimmed(_ raw: String) -> String {
        if let first = raw.utf8.first, let last = raw.utf8.last,
           first >= 0x21 && first <= 0x7E, last >= 0x21 && last <= 0x7E {
            return raw
        }
        let scalars = raw.unicodeScalars
        guard let first = scalars.first, let last = scalars.last,
              !isTrimmable(first), !isTrimmable(last) else {
            return raw.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return raw
    }

    /// Whether trimming removes `scalar`; printable ASCII (the usual ends of a text) is
    /// decided without asking `CharacterSet`.
    public static func isTrimmable(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.value >= 0x21 && scalar.value <= 0x7E { return false }
        return CharacterSet.whitespacesAndNewlines.contains(scalar)
    }

    /// Whether `text` has more than `limit` characters; counts characters only when its
    /// UTF-8 length (never less than its character count) says it might.
    public static func exceeds(_ text: String, _ limit: Int) -> Bool {
        text.utf8.count > limit && text.count > limit
    }
}
