import HTTPServer
import Library

/// Entity tags (RFC 9110 §8.8.3) and the conditional requests that use them.
enum ETag {
    /// A strong tag from a 64-bit FNV-1a hash of the bytes.
    static func strong(for bytes: [UInt8]) -> String {
        "\"" + hash(bytes) + "\""
    }

    /// FNV-1a 64 of `bytes` as 16 hex digits.
    static func hash(_ bytes: [UInt8]) -> String {
        FNV1a.hex(FNV1a.hash(bytes))
    }

    /// Whether an `If-None-Match` / `If-Match` list matches `tag` (weak comparison for
    /// If-None-Match, RFC 9110 §13.1.2; `*` matches anything).
    static func list(_ header: String, matches tag: String) -> Bool {
        let opaque = tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag
        for item in header.split(separator: ",") {
            let candidate = item.trimmingASCIIWhitespace()
            if candidate == "*" { return true }
            let bare = candidate.hasPrefix("W/") ? String(candidate.dropFirst(2)) : candidate
            if bare == opaque { return true }
        }
        return false
    }
}

extension ETag {
    /// Whether an `If-Match` list matches `tag` by strong comparison: `*`, or the same
    /// opaque tag with neither side weak.
    static func strongList(_ header: String, matches tag: String) -> Bool {
        guard !tag.hasPrefix("W/") else { return false }
        return header.split(separator: ",").contains { item in
            let candidate = item.trimmingASCIIWhitespace()
            return candidate == "*" || candidate == tag
        }
    }
}

enum ConditionalGET {
    /// Answers 304 when the request's `If-None-Match` matches the response's ETag.
    static func respond(to request: HTTPRequest, with response: HTTPResponse) throws -> HTTPResponse {
        guard let tag = response.headers["ETag"], let condition = request.headers["If-None-Match"],
            ETag.list(condition, matches: tag)
        else { return response }
        var headers = HTTPHeaders()
        for name in ["ETag", "Cache-Control", "Vary", "Location"] {
            if let value = response.headers[name] { headers.set(name, value) }
        }
        return HTTPResponse(status: .notModified, headers: headers)
    }
}
