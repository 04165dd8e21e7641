/// A parsed request line and header block, with the framing facts the connection needs.
struct HTTPRequestHead: Sendable {
    var method: HTTPMethod
    var target: String
    var version: HTTPVersion
    var headers: HTTPHeaders
    var framing: BodyFraming
    var expectsContinue: Bool

    enum BodyFraming: Sendable, Equatable {
        case none
        case length(Int)
        case chunked
    }
}

/// Parses a request head out of a byte buffer without consuming anything until the whole
/// head is there (RFC 9112 §2-§6).
struct HTTPHeadParser {
    let limits: HTTPServerLimits

    enum Result {
        case needMoreData
        case head(HTTPRequestHead, consumed: Int)
    }

    /// Looks at `buffer[start...]`. Throws `HTTPParseError` for anything malformed or too large.
    func parse(_ buffer: [UInt8], from start: Int) throws(HTTPParseError) -> Result {
        // Leading empty lines before a request line are ignored (RFC 9112 §2.2).
        var lineStart = start
        while lineStart < buffer.count, buffer[lineStart] == 0x0D || buffer[lineStart] == 0x0A {
            lineStart += 1
        }
        guard let headEnd = Self.findHeadEnd(buffer, from: lineStart) else {
            let pending = buffer.count - lineStart
            if Self.firstLineEnd(buffer, from: lineStart, limit: limits.maxRequestLineBytes) == nil,
                pending > limits.maxRequestLineBytes
            {
                throw .requestLineTooLong
            }
            // The skipped empty lines count too, or an endless stream of them would grow the buffer.
            if buffer.count - start > limits.maxHeadBytes { throw .headTooLarge }
            return .needMoreData
        }
        if headEnd.contentEnd - start > limits.maxHeadBytes { throw .headTooLarge }

        var lines = LineIterator(buffer: buffer, position: lineStart, end: headEnd.contentEnd)
        guard let requestLine = lines.next() else { throw .malformedRequestLine }
        if requestLine.count > limits.maxRequestLineBytes { throw .requestLineTooLong }
        let (method, target, version) = try Self.parseRequestLine(buffer[requestLine])

        var headers = HTTPHeaders()
        while let line = lines.next() {
            if headers.count >= limits.maxHeaderCount { throw .tooManyHeaders }
            let field = try Self.parseField(buffer[line])
            headers.add(field.name, field.value)
        }

        if version == .http1_1 && !headers.contains("Host") { throw .missingHost }
        let framing = try Self.framing(of: headers)
        let expectsContinue =
            version == .http1_1 && headers["Expect"].map { $0.equalsIgnoringASCIICase("100-continue") } == true
        let head = HTTPRequestHead(
            method: method, target: target, version: version, headers: headers,
            framing: framing, expectsContinue: expectsContinue)
        return .head(head, consumed: headEnd.next - start)
    }

    /// The end of the header block: the index after the last header line's content, and the
    /// index after the empty line. Accepts CRLF or bare LF line ends.
    static func findHeadEnd(_ buffer: [UInt8], from start: Int) -> (contentEnd: Int, next: Int)? {
        var i = start
        let count = buffer.count
        while i < count {
            if buffer[i] == 0x0A {
                // An LF followed by an empty line (CRLF or LF) ends the head.
                if i + 1 < count, buffer[i + 1] == 0x0A { return (i + 1, i + 2) }
                if i + 2 < count, buffer[i + 1] == 0x0D, buffer[i + 2] == 0x0A { return (i + 1, i + 3) }
            }
            i += 1
        }
        return nil
    }

    static func firstLineEnd(_ buffer: [UInt8], from start: Int, limit: Int) -> Int? {
        let end = min(buffer.count, start + limit + 2)
        var i = start
        while i < end {
            if buffer[i] == 0x0A { return i }
            i += 1
        }
        return nil
    }

    static func parseRequestLine(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> (HTTPMethod, String, HTTPVersion) {
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else { throw .malformedRequestLine }
        for byte in parts[0] where !isTokenByte(byte) { throw .malformedRequestLine }
        for byte in parts[1] where byte <= 0x20 || byte >= 0x7F { throw .malformedRequestLine }
        let target = String(decoding: parts[1], as: UTF8.self)
        // Origin form only (plus `*` for OPTIONS); absolute form is for proxies.
        guard target.utf8.first == UInt8(ascii: "/") || target == "*" else { throw .malformedRequestLine }
        let version: HTTPVersion
        switch String(decoding: parts[2], as: UTF8.self) {
        case "HTTP/1.1": version = .http1_1
        case "HTTP/1.0": version = .http1_0
        case let other where other.hasPrefix("HTTP/"): throw .unsupportedVersion
        default: throw .malformedRequestLine
        }
        return (HTTPMethod(rawValue: String(decoding: parts[0], as: UTF8.self)), target, version)
    }

    static func parseField(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> HTTPHeaders.Field {
        // obs-fold (a line starting with whitespace) is rejected (RFC 9112 §5.2).
        guard let first = line.first, first != 0x20, first != 0x09,
            let colon = line.firstIndex(of: UInt8(ascii: ":"))
        else { throw .malformedHeader }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty else { throw .malformedHeader }
        for byte in name where !isTokenByte(byte) { throw .malformedHeader }
        var valueStart = colon + 1
        var valueEnd = line.endIndex
        while valueStart < valueEnd, line[valueStart] == 0x20 || line[valueStart] == 0x09 { valueStart += 1 }
        while valueEnd > valueStart, line[valueEnd - 1] == 0x20 || line[valueEnd - 1] == 0x09 { valueEnd -= 1 }
        for byte in line[valueStart..<valueEnd] where byte == 0 || byte == 0x0D || byte == 0x0A {
            throw .malformedHeader
        }
        return HTTPHeaders.Field(
            name: String(decoding: name, as: UTF8.self),
            value: String(decoding: line[valueStart..<valueEnd], as: UTF8.self))
    }

    static func framing(of headers: HTTPHeaders) throws(HTTPParseError) -> HTTPRequestHead.BodyFraming {
        let transferEncodings = headers.tokens(for: "Transfer-Encoding")
        let lengths = headers.values(for: "Content-Length")
        if !transferEncodings.isEmpty {
            // A message with both is a smuggling attempt or a broken client (RFC 9112 §6.3).
            if !lengths.isEmpty { throw .conflictingFraming }
            guard transferEncodings == ["chunked"] else { throw .unsupportedTransferEncoding }
            return .chunked
        }
        guard !lengths.isEmpty else { return .none }
        var result: Int?
        for value in lengths {
            for item in value.split(separator: ",", omittingEmptySubsequences: false) {
                let digits = item.trimmingASCIIWhitespace()
                guard !digits.isEmpty, digits.utf8.count <= 18, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                    let n = Int(digits)
                else { throw .invalidContentLength }
                if let previous = result, previous != n { throw .invalidContentLength }
                result = n
            }
        }
        return result.map { .length($0) } ?? .none
    }

    /// tchar (RFC 9110 §5.6.2).
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }
}

/// Lines of a head, without their CR/LF.
struct LineIterator {
    let buffer: [UInt8]
    var position: Int
    let end: Int

    mutating func next() -> Range<Int>? {
        guard position < end else { return nil }
        var i = position
        while i < end, buffer[i] != 0x0A { i += 1 }
        var lineEnd = i
        if lineEnd > position, buffer[lineEnd - 1] == 0x0D { lineEnd -= 1 }
        let range = position..<lineEnd
        position = i + 1
        return range
    }
}
