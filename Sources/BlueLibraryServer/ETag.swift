import Essentials
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
    /// If-None-Match, RFC 9110 §13.1.2; `*` matches anything). Byte-level, no allocation: a
    /// revalidation is answered with little more work than the 304 itself.
    static func list(_ header: String, matches tag: String) -> Bool {
        var header = header
        return header.withUTF8 { list($0, matches: tag) }
    }

    /// ``list(_:matches:)`` on the header's bytes, as ``HTTPHeaders/withFirstValue(_:_:)``
    /// hands them over (a received `If-None-Match` never becomes a String).
    static func list(_ header: UnsafeBufferPointer<UInt8>, matches tag: String) -> Bool {
        forEachMember(of: header, comparedWith: tag) { member, tag in
            member.elementsEqual("*".utf8) || weakOpaque(member).elementsEqual(weakOpaque(tag))
        }
    }

    typealias Bytes = Slice<UnsafeBufferPointer<UInt8>>

    /// Calls `matches` with each comma-separated member of a list header, trimmed of spaces
    /// and tabs, and the tag; true as soon as one matches.
    fileprivate static func forEachMember(
        of header: UnsafeBufferPointer<UInt8>, comparedWith tag: String, _ matches: (_ member: Bytes, _ tag: Bytes) -> Bool
    ) -> Bool {
        var tag = tag
        return tag.withUTF8 { tagBytes in
            let bytes = header
            var start = 0
            while start < bytes.count {
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: ",") { end += 1 }
                var first = start
                var last = end
                while first < last, bytes[first] == 0x20 || bytes[first] == 0x09 { first += 1 }
                while last > first, bytes[last - 1] == 0x20 || bytes[last - 1] == 0x09 { last -= 1 }
                if first < last, matches(bytes[first..<last], tagBytes[...]) { return true }
                start = end + 1
            }
            return false
        }
    }

    /// The tag without a leading `W/`.
    private static func weakOpaque(_ tag: Bytes) -> Bytes {
        tag.starts(with: "W/".utf8) ? tag.dropFirst(2) : tag
    }
}

extension ETag {
    /// Whether an `If-Match` list matches `tag` by strong comparison: `*`, or the same
    /// opaque tag with neither side weak.
    static func strongList(_ header: String, matches tag: String) -> Bool {
        guard !tag.hasPrefix("W/") else { return false }
        var header = header
        return header.withUTF8 { header in
            forEachMember(of: header, comparedWith: tag) { member, tag in
                member.elementsEqual("*".utf8) || member.elementsEqual(tag)
            }
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
