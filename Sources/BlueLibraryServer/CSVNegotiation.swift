import HTTPServer

/// Whether a list request (`GET /albums`, `/libraries/{lib}/albums`, `/views/{view}/albums`)
/// asks for CSV instead of a JSON page.
///
/// Rules:
/// - `?format=csv` asks for CSV and `?format=json` for JSON, whatever `Accept` says; any other
///   value is 400 naming `format`.
/// - Without `format`, `Accept` decides: CSV only when it names `text/csv` itself with q > 0
///   and prefers it to JSON — a higher q than `application/json`'s (named or through
///   `application/*` or `*/*`), or the same q when JSON is only matched by a wildcard
///   (`Accept: text/csv, */*`). So a browser's or curl's `*/*`, and a client naming both at
///   the same q, keep JSON, the default.
/// - Cost: the event-loop fast path calls only ``mayAskForCSV(_:)``, a byte scan of the raw
///   query for `format` and of the first `Accept` value for `csv`; a request that may ask for
///   CSV goes to the worker pool, where ``asksForCSV(_:)`` parses both.
enum CSVNegotiation {
    /// True when the request may ask for CSV (false is certain; true is checked by
    /// ``asksForCSV(_:)``). No allocation.
    static func mayAskForCSV(_ request: HTTPRequest) -> Bool {
        if let query = request.rawQuery, contains(query.utf8, "format") { return true }
        return request.headers.withFirstValue("Accept") { containsIgnoringCase($0, "csv") } ?? false
    }

    /// Whether the request asks for CSV (see the type's rules).
    /// - Throws: 400 `invalid-query-parameter` for a `format` other than `csv` or `json`.
    static func asksForCSV(_ request: HTTPRequest) throws -> Bool {
        if let format = QueryParameters(request).text("format") {
            switch format.lowercased() {
            case "csv": return true
            case "json": return false
            default:
                throw QueryParameters.invalid("format", "format must be csv or json, not '\(QueryParameters.quoted(format))'.")
            }
        }
        return prefersCSV(accept: request.headers.values(for: "Accept"))
    }

    /// `Accept` (its field values) prefers `text/csv` to JSON.
    static func prefersCSV(accept values: [String]) -> Bool {
        var csv = 0.0, json = 0.0, jsonByWildcard = 0.0
        for range in values.flatMap({ $0.split(separator: ",") }) {
            let parts = range.split(separator: ";").map { String($0).trimmingASCIIWhitespace().lowercased() }
            guard let type = parts.first else { continue }
            var quality = 1.0
            for parameter in parts.dropFirst() where parameter.hasPrefix("q=") {
                quality = Double(parameter.dropFirst(2)).map { min(max($0, 0), 1) } ?? 0
            }
            switch type {
            case "text/csv": csv = max(csv, quality)
            case "application/json": json = max(json, quality)
            case "application/*", "*/*": jsonByWildcard = max(jsonByWildcard, quality)
            default: continue
            }
        }
        guard csv > 0 else { return false }
        return json > 0 ? csv > json : csv >= jsonByWildcard
    }

    /// The query parameters a CSV export refuses: it is the whole list, not a page.
    static let pagingParameters = ["limit", "cursor", "offset"]

    /// 400 naming the first paging parameter the request sends.
    static func refusePaging(_ request: HTTPRequest) throws {
        let parameters = QueryParameters(request)
        for name in pagingParameters where parameters.text(name) != nil {
            throw QueryParameters.invalid(
                name, "\(name) cannot be used with CSV: a CSV export is the whole list, every page of it;"
                    + " narrow it with q, artist, genre, yearFrom or yearTo instead.")
        }
    }

    private static func contains(_ haystack: Substring.UTF8View, _ needle: StaticString) -> Bool {
        let count = needle.utf8CodeUnitCount
        guard haystack.count >= count else { return false }
        return needle.withUTF8Buffer { needle in
            var index = haystack.startIndex
            while let end = haystack.index(index, offsetBy: count, limitedBy: haystack.endIndex) {
                if haystack[index..<end].elementsEqual(needle) { return true }
                index = haystack.index(after: index)
            }
            return false
        }
    }

    private static func containsIgnoringCase(_ haystack: UnsafeBufferPointer<UInt8>, _ needle: StaticString) -> Bool {
        let count = needle.utf8CodeUnitCount
        guard haystack.count >= count else { return false }
        return needle.withUTF8Buffer { needle in
            for start in 0...(haystack.count - count) {
                var matched = true
                for offset in 0..<count where haystack[start + offset] | 0x20 != needle[offset] {
                    matched = false
                    break
                }
                if matched { return true }
            }
            return false
        }
    }
}
