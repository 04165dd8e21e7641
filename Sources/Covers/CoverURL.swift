import Essentials
import Library

/// A cover URL taken apart and put back together in one normal form, which is both the cache
/// key and what curl is given: lower-case scheme and host, no default port, no fragment, `/`
/// for an empty path. Only absolute `http`/`https` URLs with a host and without user info
/// (no credentials ever leave with a cover request) are accepted; bytes outside printable
/// ASCII and backslashes are refused, so curl and this parser cannot disagree on the host.
public struct CoverURL: Sendable, Hashable, CustomStringConvertible {
    public let scheme: String
    /// Lower-case; an IPv6 literal without its brackets.
    public let host: String
    public let port: Int?
    /// The path and query, starting with `/`.
    public let pathAndQuery: String

    /// The longest URL accepted (the album rules allow 2048).
    public static let maxLength = 4096

    public init(_ text: String) throws(CoverError) {
        func invalid(_ why: String) -> CoverError { CoverError(.invalidURL, detail: "The cover URL \(why).") }
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= Self.maxLength else { throw invalid("is empty or too long") }
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x5C }) else {
            throw invalid("contains spaces, control characters, backslashes or non-ASCII bytes")
        }
        guard let schemeEnd = text.range(of: "://") else { throw invalid("is not absolute") }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { throw invalid("must use http or https") }
        var rest = text[schemeEnd.upperBound...]
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var path = String(rest[authorityEnd...])
        if path.isEmpty || path.hasPrefix("?") { path = "/" + path }
        guard !authority.contains("@") else { throw invalid("must not carry user information") }

        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw invalid("has an unclosed IPv6 literal") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("has a malformed host") }
                portText = after.dropFirst()
            }
            guard let address = IPAddress(String(host)), !address.isIPv4 || host.contains(":") else {
                throw invalid("has a malformed IPv6 literal")
            }
        } else {
            if let colon = authority.firstIndex(of: ":") {
                host = authority[..<colon]
                portText = authority[authority.index(after: colon)...]
            } else {
                host = authority
            }
            guard host.utf8.allSatisfy({ byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == 0x2D || byte == 0x2E || byte == 0x5F
            }) else { throw invalid("has a malformed host") }
        }
        guard !host.isEmpty else { throw invalid("has no host") }
        var port: Int?
        if let portText, !portText.isEmpty {
            guard portText.utf8.count <= 5, let value = Int(portText), value > 0, value <= 65535 else {
                throw invalid("has a malformed port")
            }
            port = value
        }
        if port == (scheme == "http" ? 80 : 443) { port = nil }
        self.scheme = scheme
        self.host = host.lowercased()
        self.port = port
        self.pathAndQuery = path
    }

    /// The normal form: the cache key and the URL curl fetches.
    public var description: String {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(hostPart)\(port.map { ":\($0)" } ?? "")\(pathAndQuery)"
    }
}
