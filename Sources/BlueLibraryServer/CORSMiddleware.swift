import Essentials
import HTTPServer

/// Cross-origin requests from browsers, for the exact origins of `BLUELIBRARY_CORS_ORIGINS`
/// (installed only when there are some: by default no response carries a CORS header, and a
/// page from another origin cannot read any answer).
///
/// - A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) from an allowed
///   origin is answered here, 204 with the methods and request headers the API uses, before the
///   access check: browsers never send a token with a preflight. From any other origin it goes
///   on like any `OPTIONS` (405 with `Allow`, or 401 when reads are protected), with no CORS
///   header, so the browser refuses the real request. The head check lets a preflight from an
///   allowed origin through even when reads are protected (``preflightOrigin(of:)``).
/// - Any other request from an allowed origin gets `Access-Control-Allow-Origin` with that
///   origin and `Access-Control-Expose-Headers`; every response says `Vary: Origin`, since
///   what it carries depends on it. No credentials mode: the token is a header, not a cookie.
struct CORSMiddleware: HTTPMiddleware {
    let origins: Set<String>

    static let allowedMethods = "GET, HEAD, POST, PUT, PATCH, DELETE"
    static let allowedHeaders =
        "Accept, Authorization, Content-Type, If-Match, If-None-Match, Idempotency-Key, Last-Event-ID, X-Request-Id, BlueLibrary-Position"
    static let exposedHeaders =
        "ETag, Link, Location, Retry-After, X-Request-Id, Allow, WWW-Authenticate, Content-Disposition, BlueLibrary-Position"
    /// How long a browser may keep a preflight's answer (seconds).
    static let maxAge = "600"

    init(origins: [String]) {
        self.origins = Set(origins)
    }

    /// The request's `Origin` when it is one of `origins`.
    func allowedOrigin(of request: HTTPRequest) -> String? {
        request.headers["Origin"].flatMap { origins.contains($0) ? $0 : nil }
    }

    /// `response` as this middleware would send it for `request` (for answers that skip it).
    func stamped(_ response: HTTPResponse, request: HTTPRequest) -> HTTPResponse {
        Self.stamped(response, origin: allowedOrigin(of: request))
    }

    /// The origin of `request` when it is a preflight (`OPTIONS` with `Access-Control-Request-Method`)
    /// from an allowed origin: one this middleware answers, and that the access check lets
    /// through without a token (also from the request head, even with `protectReads`).
    func preflightOrigin(of request: HTTPRequest) -> String? {
        guard request.method == .options, request.headers["Access-Control-Request-Method"] != nil else { return nil }
        return allowedOrigin(of: request)
    }

    func handle(_ request: HTTPRequest, context: RequestContext, next: any HTTPResponder) throws -> HTTPReply {
        if let origin = preflightOrigin(of: request) {
            return .response(Self.preflight(origin: origin))
        }
        let origin = allowedOrigin(of: request)
        switch try next.respond(to: request, context: context) {
        case let .response(response):
            return .response(Self.stamped(response, origin: origin))
        case let .blocking(work):
            return .blocking { Self.stamped(try work(), origin: origin) }
        }
    }

    static func preflight(origin: String) -> HTTPResponse {
        HTTPResponse(status: .noContent, headers: [
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Allow-Methods": allowedMethods,
            "Access-Control-Allow-Headers": allowedHeaders,
            "Access-Control-Max-Age": maxAge,
            "Vary": "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
            "Cache-Control": "no-store",
        ])
    }

    /// `response` with `Vary: Origin`, and the allow and expose headers for an allowed origin.
    static func stamped(_ response: HTTPResponse, origin: String?) -> HTTPResponse {
        var response = response
        if let vary = response.headers["Vary"] {
            if !response.headers.tokens(for: "Vary").contains(where: { $0.equalsIgnoringASCIICase("Origin") }) {
                response.headers.set("Vary", vary + ", Origin")
            }
        } else {
            response.headers.set("Vary", "Origin")
        }
        if let origin {
            response.headers.set("Access-Control-Allow-Origin", origin)
            response.headers.set("Access-Control-Expose-Headers", exposedHeaders)
        }
        return response
    }

    /// Parses a comma-separated list of origins (`https://app.example.com`,
    /// `http://localhost:5173`): each `http` or `https`, a host, an optional port, nothing
    /// after; written as browsers send them (lower case, no default port). `*` is refused:
    /// list the origins.
    static func origins(_ text: String) throws(ConfigurationError) -> [String] {
        var result: [String] = []
        for item in text.split(separator: ",") {
            let entry = item.trimmingASCIIWhitespace()
            guard !entry.isEmpty else { continue }
            guard entry != "*" else {
                throw ConfigurationError("CORS origins must be listed one by one (like https://app.example.com), not '*'")
            }
            guard let origin = origin(entry) else {
                throw ConfigurationError(
                    "CORS origin '\(entry)' must be scheme://host[:port] with http or https and nothing after (like https://app.example.com)")
            }
            if !result.contains(origin) { result.append(origin) }
        }
        return result
    }

    /// `text` as a browser would send it in `Origin`, or nil when it is not an origin.
    static func origin(_ text: String) -> String? {
        let lower = text.lowercased()
        let scheme: String
        if lower.hasPrefix("https://") { scheme = "https://" } else if lower.hasPrefix("http://") { scheme = "http://" } else { return nil }
        let authority = lower.dropFirst(scheme.count)
        guard !authority.isEmpty, !authority.contains(where: { "/?#@ ".contains($0) }) else { return nil }
        var host = Substring(authority)
        if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
            let port = authority[authority.index(after: colon)...]
            guard let number = Int(port), (1...65535).contains(number), !port.hasPrefix("0") else { return nil }
            host = authority[..<colon]
        }
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), IPAddress(String(host.dropFirst().dropLast())) != nil else { return nil }
        } else {
            guard !host.isEmpty, host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." }), host.unicodeScalars.allSatisfy(\.isASCII)
            else { return nil }
        }
        // A browser leaves the scheme's default port out of `Origin`.
        let defaultPort = scheme == "https://" ? ":443" : ":80"
        if authority.hasSuffix(defaultPort) { return scheme + authority.dropLast(defaultPort.count) }
        return scheme + authority
    }
}
