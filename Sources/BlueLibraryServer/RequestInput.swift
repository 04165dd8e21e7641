import BlueLibraryAPI
import HTTPServer
import Library

/// Reading what clients send: content types, numbers in paths and queries, client names.
enum RequestInput {
    /// The media type of the body without parameters, lowercased (`application/json`).
    static func mediaType(of request: HTTPRequest) -> String? {
        request.headers["Content-Type"].map {
            ($0.split(separator: ";").first.map { $0.trimmingASCIIWhitespace() } ?? "").lowercased()
        }
    }

    /// Requires a JSON body (`application/json`, or `+json` such as `application/merge-patch+json`).
    static func requireJSON(_ request: HTTPRequest) throws {
        let type = mediaType(of: request)
        guard let type, type == "application/json" || (type.hasPrefix("application/") && type.hasSuffix("+json")) else {
            throw HTTPError(
                .unsupportedMediaType,
                detail: "Send the body as JSON with 'Content-Type: application/json' (got \(type.map { "'\($0)'" } ?? "no Content-Type")); with curl use --json.",
                headers: ["Accept-Post": "application/json"])
        }
        // A streamed body is still arriving: the parser reports an empty one.
        guard !request.body.isEmpty || request.bodyStream != nil else {
            throw HTTPError(.badRequest, detail: "The request body is empty; send a JSON object.")
        }
    }

    /// An index from a path (`/albums/at/{index}`): a whole number in
    /// `IntegerRules.positions` written in decimal digits, else 400
    /// `urn:bluelibrary:problem:invalid-path-parameter` naming it and the range.
    static func index(_ text: String, name: String = "index") throws -> Int {
        guard let value = QueryParameters.decimal(text), IntegerRules.positions.contains(value) else {
            throw invalidPathParameter(name, "\(name) must be \(IntegerRules.wholeNumber(IntegerRules.positions)), not '\(QueryParameters.quoted(text))'.")
        }
        return value
    }

    static let invalidPathParameterType = "urn:bluelibrary:problem:invalid-path-parameter"

    /// The 400 for a bad path parameter `name`; `message` starts with its name.
    static func invalidPathParameter(_ name: String, _ message: String) -> HTTPError {
        HTTPError(.badRequest, detail: message, type: invalidPathParameterType, title: "Invalid path parameter",
                  errors: [.init(field: name, message: message)])
    }

    /// An optional integer query parameter within `range`.
    static func integer(_ request: HTTPRequest, _ name: String, in range: ClosedRange<Int>) throws -> Int? {
        try QueryParameters(request).integer(name, in: range)
    }

    /// The `?client=` name (default "default"), validated by the domain's rule.
    static func client(_ request: HTTPRequest) throws -> String {
        let name = QueryParameters(request).text("client") ?? ClientName.default
        do {
            try ClientName.validate(name)
        } catch {
            throw QueryParameters.invalid("client", error.message)
        }
        return name
    }

    /// The album id from the path; an impossible id is simply not found.
    static func albumID(_ context: RequestContext) throws -> AlbumID {
        let text = try context.parameter("id")
        return try AlbumID.parse(text)
    }

    /// An absolute URL for `path` (a path of this server, `/albums?...`) as the client sees the
    /// server: behind a proxy its scheme, host and path prefix (`X-Forwarded-Prefix`). Without a
    /// plausible host, the path with the prefix.
    static func absoluteURL(_ path: String, _ context: RequestContext) -> String {
        guard let host = context.host, isPlausibleHost(host) else { return context.pathPrefix + path }
        return "\(context.scheme)://\(host)\(context.pathPrefix)\(path)"
    }

    /// A host[:port] made only of what host names and IP literals use; anything else (a client
    /// trying to inject text into Location or Link) gets a relative URL instead.
    static func isPlausibleHost(_ host: String) -> Bool {
        !host.isEmpty && host.utf8.count <= 255 && host.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "_"):
                true
            default:
                false
            }
        }
    }
}
