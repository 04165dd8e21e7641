import Foundation

/// What a request's `Accept-Encoding` (RFC 9110, 12.5.3) allows of the one content coding the
/// server sends, gzip.
enum ContentCoding {
    /// Whether `header` allows gzip: `gzip` (or its alias `x-gzip`) with a weight above 0, or
    /// `*` above 0 when gzip is not named. No header, an empty one, `identity` alone or
    /// `gzip;q=0` do not. Names are case-insensitive; a member whose weight cannot be read is
    /// ignored.
    static func acceptsGzip(_ header: String?) -> Bool {
        guard let header else { return false }
        var gzip: Bool?
        var any: Bool?
        for member in header.split(separator: ",") {
            let parts = member.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let name = parts.first?.lowercased(), !name.isEmpty, let weight = weight(parts.dropFirst()) else { continue }
            switch name {
            case "gzip", "x-gzip": gzip = (gzip ?? false) || weight
            case "*": any = weight
            default: break
            }
        }
        return gzip ?? any ?? false
    }

    /// Whether the parameters' `q` is above 0 (no `q`: 1); nil when it is not a weight
    /// (`0` to `1` with up to three decimals).
    private static func weight(_ parameters: ArraySlice<String>) -> Bool? {
        for parameter in parameters {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, pair[0].lowercased() == "q" else { continue }
            let value = pair[1]
            guard value.range(of: #"^(0(\.[0-9]{0,3})?|1(\.0{0,3})?)$"#, options: .regularExpression) != nil else { return nil }
            return value.contains { $0 >= "1" && $0 <= "9" }
        }
        return true
    }
}
