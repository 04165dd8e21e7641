import Foundation

/// The rules for each user-editable album field, shared by create, patch and archive import
/// so the three can never disagree.
enum AlbumFieldRules {
    /// Text fields (title, artist, genre) are at most this many characters after trimming.
    static let maximumTextLength = 500
    /// `coverUrl` is at most this many characters (a common URL limit of browsers and proxies).
    static let maximumURLLength = 2048
    static let yearRange = 1000...9999

    static let yearMessage = "must be an integer between 1000 and 9999, or a 4-digit string like \"1992\""
    static let coverURLMessage = "must be an absolute http or https URL like \"https://example.com/cover.png\", or null"

    /// Trims surrounding whitespace and checks the length rule.
    ///
    /// Rule: stored text is trimmed, so `"  Sting "` and `"Sting"` are the same artist, and a
    /// value of only spaces counts as empty.
    static func text(_ key: String, _ value: Any, reader: inout JSONFieldReader) -> String? {
        guard let raw = reader.string(key, value, hint: "a string") else { return nil }
        return text(key, raw, errors: &reader)
    }

    static func text(_ key: String, _ raw: String, errors reader: inout JSONFieldReader) -> String? {
        let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty {
            reader.fail(key, "must not be empty or only whitespace")
            return nil
        }
        if trimmed.count > maximumTextLength {
            reader.fail(key, "must be at most \(maximumTextLength) characters (got \(trimmed.count))")
            return nil
        }
        return trimmed
    }

    /// A year given as a JSON integer or as a 4-digit string ("1992", as the tutorial stored
    /// it); the result is always an integer.
    static func year(_ key: String, _ value: Any, reader: inout JSONFieldReader) -> Int? {
        if let string = value as? String {
            let digits = string.trimmingCharacters(in: .whitespaces)
            guard digits.utf8.count == 4, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                  let year = Int(digits), yearRange.contains(year) else {
                reader.fail(key, yearMessage + " (got \"\(string)\")")
                return nil
            }
            return year
        }
        guard let number = JSONValueKind.integer(value) else {
            reader.fail(key, yearMessage + " (got \(JSONValueKind.describe(value)))")
            return nil
        }
        return year(key, number, reader: &reader)
    }

    static func year(_ key: String, _ year: Int, reader: inout JSONFieldReader) -> Int? {
        guard yearRange.contains(year) else {
            reader.fail(key, yearMessage + " (got \(year))")
            return nil
        }
        return year
    }

    static func coverURL(_ key: String, _ value: Any, reader: inout JSONFieldReader) -> String? {
        guard let raw = reader.string(key, value, hint: "a string") else { return nil }
        return coverURL(key, raw, reader: &reader)
    }

    /// Rule: an absolute `http`/`https` URL with a host, at most 2048 characters. Other schemes
    /// are refused because the cover fetcher (curl) must never be pointed at `file:` or `ftp:`.
    static func coverURL(_ key: String, _ raw: String, reader: inout JSONFieldReader) -> String? {
        let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.count > maximumURLLength {
            reader.fail(key, "must be at most \(maximumURLLength) characters (got \(trimmed.count))")
            return nil
        }
        guard let url = URL(string: trimmed), let scheme = url.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty else {
            reader.fail(key, coverURLMessage + " (got \"\(raw)\")")
            return nil
        }
        return trimmed
    }
}
