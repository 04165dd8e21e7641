/// The protocol version of a request; only HTTP/1.0 and HTTP/1.1 are spoken.
public enum HTTPVersion: Sendable, Equatable {
    case http1_0
    case http1_1

    var text: String { self == .http1_0 ? "HTTP/1.0" : "HTTP/1.1" }
}

/// One parsed request with its whole body.
public struct HTTPRequest: Sendable {
    public var method: HTTPMethod
    /// The request target as sent (origin form: path and optional query), percent-encoded.
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// The body still arriving, for routes with `RouteOptions.streamsBody` (`body` is then
    /// empty); nil for every other request, and when there is no body.
    public var bodyStream: HTTPRequestBodyStream?

    public init(
        method: HTTPMethod, target: String, version: HTTPVersion = .http1_1,
        headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []
    ) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
    }

    /// The path part of the target, still percent-encoded.
    public var path: Substring {
        if let q = target.utf8.firstIndex(of: UInt8(ascii: "?")) { return target[..<q] }
        return target[...]
    }

    /// The raw query string (after `?`), or nil.
    public var rawQuery: Substring? {
        guard let q = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return nil }
        return target[target.index(after: q)...]
    }

    /// The decoded query parameters, in order (`a=1&b` gives `[("a","1"), ("b","")]`).
    public var queryItems: [(name: String, value: String)] {
        guard let raw = rawQuery, !raw.isEmpty else { return [] }
        return raw.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            if let eq = pair.firstIndex(of: "=") {
                return (
                    PercentDecoding.decode(pair[..<eq], plusAsSpace: true) ?? String(pair[..<eq]),
                    PercentDecoding.decode(pair[pair.index(after: eq)...], plusAsSpace: true)
                        ?? String(pair[pair.index(after: eq)...])
                )
            }
            return (PercentDecoding.decode(pair, plusAsSpace: true) ?? String(pair), "")
        }
    }

    /// The first value of query parameter `name`.
    public func query(_ name: String) -> String? {
        queryItems.first { $0.name == name }?.value
    }
}

/// Percent-decoding of URI components (RFC 3986 §2.1).
public enum PercentDecoding {
    /// Decodes `%XX` escapes (and `+` as space in query components). Returns nil for a bad
    /// escape or bytes that are not UTF-8.
    public static func decode<S: StringProtocol>(_ text: S, plusAsSpace: Bool = false) -> String? {
        var needsWork = false
        for byte in text.utf8 where byte == UInt8(ascii: "%") || (plusAsSpace && byte == UInt8(ascii: "+")) {
            needsWork = true
            break
        }
        if !needsWork { return String(text) }
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let h = iterator.next().flatMap(hexValue), let l = iterator.next().flatMap(hexValue)
                else { return nil }
                out.append(h << 4 | l)
            } else if plusAsSpace && byte == UInt8(ascii: "+") {
                out.append(0x20)
            } else {
                out.append(byte)
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
