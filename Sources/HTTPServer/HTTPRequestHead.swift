/// A parsed request line and header block, with the framing facts the connection needs.
struct HTTPRequestHead: Sendable {
    var method: HTTPMethod
    var target: String
    var version: HTTPVersion
    var headers: HTTPHeaders
    var framing: BodyFraming
    var expectsContinue: Bool
    /// Whether the connection may stay open after this request (RFC 9112 §9.3).
    var wantsKeepAlive: Bool

    enum BodyFraming: Sendable, Equatable {
        case none
        case length(Int)
        case chunked
    }
}

/// How far the head parser has looked into a head that is not complete yet, so that the next
/// call resumes there instead of rescanning from the head's first byte: a head trickled in a
/// byte per read costs linear work, not quadratic. Offsets count from the head's start (the
/// `start` given to ``HTTPHeadParser/parse(_:from:scan:)``), so they stay valid when the
/// connection compacts its buffer. A connection keeps one per head and starts afresh with each
/// head (the parser resets it when it returns one).
struct HTTPHeadScan {
    /// Empty lines (CR, LF) known to come before the request line.
    var skipped = 0
    /// Where the search for the empty line ending the head resumes.
    var headEndScanned = 0
    /// Where the search for the end of the request line resumes (while not found).
    var requestLineScanned = 0
    var requestLineEnded = false
    /// Bytes the searches above have looked at, over every head parsed with this value: what
    /// the tests measure to prove that scanning resumes. (One add per call, not per byte.)
    private(set) var bytesExamined = 0

    init() {}

    /// Forgets the positions (a head was taken, or the input was dropped); keeps the count.
    mutating func reset() {
        let examined = bytesExamined
        self = HTTPHeadScan()
        bytesExamined = examined
    }

    mutating func examined(_ count: Int) { bytesExamined &+= count }
}

/// Parses a request head out of a byte buffer without consuming anything until the whole
/// head is there (RFC 9112 §2-§6). Incremental: what it has already scanned of an incomplete
/// head is remembered in an ``HTTPHeadScan``.
struct HTTPHeadParser {
    let limits: HTTPServerLimits

    enum Result {
        case needMoreData
        case head(HTTPRequestHead, consumed: Int)
    }

    /// Looks at `buffer[start...]` from scratch (the fuzz targets). Throws `HTTPParseError` for
    /// anything malformed or too large.
    func parse(_ buffer: [UInt8], from start: Int) throws(HTTPParseError) -> Result {
        var scan = HTTPHeadScan()
        return try parse(buffer, from: start, scan: &scan)
    }

    /// Looks at `buffer[start...]`, resuming where `scan` says the previous call on the same
    /// head stopped. Throws `HTTPParseError` for anything malformed or too large.
    func parse(_ buffer: [UInt8], from start: Int, scan: inout HTTPHeadScan) throws(HTTPParseError) -> Result {
        // Leading empty lines before a request line are ignored (RFC 9112 §2.2).
        var lineStart = start + scan.skipped
        while lineStart < buffer.count, buffer[lineStart] == 0x0D || buffer[lineStart] == 0x0A {
            lineStart += 1
        }
        scan.examined(lineStart - start - scan.skipped)
        scan.skipped = lineStart - start
        let headEndFrom = max(lineStart, start + scan.headEndScanned)
        scan.examined(max(0, buffer.count - headEndFrom))
        guard let headEnd = Self.findHeadEnd(buffer, from: headEndFrom) else {
            // An LF in the last two bytes may yet end the head: look at them again next time.
            scan.headEndScanned = max(lineStart, buffer.count - 2) - start
            let pending = buffer.count - lineStart
            if !scan.requestLineEnded {
                let lineFrom = max(lineStart, start + scan.requestLineScanned)
                let lineEnd = Self.firstLineEnd(
                    buffer, from: lineFrom, limit: limits.maxRequestLineBytes - (lineFrom - lineStart))
                scan.examined(max(0, min(buffer.count, lineStart + limits.maxRequestLineBytes + 2) - lineFrom))
                if lineEnd == nil {
                    if pending > limits.maxRequestLineBytes { throw .requestLineTooLong }
                    scan.requestLineScanned = buffer.count - start
                } else {
                    scan.requestLineEnded = true
                }
            }
            // The skipped empty lines count too, or an endless stream of them would grow the buffer.
            if buffer.count - start > limits.maxHeadBytes { throw .headTooLarge }
            return .needMoreData
        }
        scan.reset()
        if headEnd.contentEnd - start > limits.maxHeadBytes { throw .headTooLarge }

        var lines = LineIterator(buffer: buffer, position: lineStart, end: headEnd.contentEnd)
        guard let requestLine = lines.next() else { throw .malformedRequestLine }
        if requestLine.count > limits.maxRequestLineBytes { throw .requestLineTooLong }
        let (method, target, version) = try Self.parseRequestLine(buffer[requestLine])

        // The field lines are copied once, with a table of where each name and value lies
        // (RequestHeadFields): no String per field. A field line takes at least 3 bytes
        // ("a:" and LF), which bounds the table.
        let fieldsStart = lines.position
        let fieldsEnd = headEnd.contentEnd
        let tableCapacity = 4 * max(1, min(limits.maxHeaderCount, (fieldsEnd - fieldsStart) / 3 + 1))
        let scanned = withUnsafeTemporaryAllocation(of: UInt32.self, capacity: tableCapacity) { table in
            Swift.Result { () throws(HTTPParseError) -> (RequestHeadFields, FieldFacts) in
                var facts = FieldFacts()
                var count = 0
                while let line = lines.next() {
                    if count >= limits.maxHeaderCount || 4 * count >= table.count { throw .tooManyHeaders }
                    let field = try Self.parseField(buffer, line)
                    let nameLength = field.name.count
                    switch buffer[field.name.lowerBound] | 0x20 {
                    // Names starting with c, t, h or e may be Content-Length, Connection,
                    // Transfer-Encoding, Host or Expect: only then are the fields searched for them.
                    case UInt8(ascii: "c"), UInt8(ascii: "t"): facts.mayHaveFraming = true
                    case UInt8(ascii: "h") where nameLength == 4 && Self.isHost(buffer, field.name): facts.hostCount += 1
                    case UInt8(ascii: "e"): facts.mayHaveExpect = true
                    default: break
                    }
                    table[4 * count] = UInt32(field.name.lowerBound - fieldsStart)
                    table[4 * count + 1] = UInt32(field.name.upperBound - fieldsStart)
                    table[4 * count + 2] = UInt32(field.value.lowerBound - fieldsStart)
                    table[4 * count + 3] = UInt32(field.value.upperBound - fieldsStart)
                    count += 1
                }
                let fields = RequestHeadFields(
                    lines: buffer[fieldsStart..<fieldsEnd], spans: UnsafeBufferPointer(rebasing: table[0..<(4 * count)]))
                return (fields, facts)
            }
        }
        let (fields, facts) = try scanned.get()
        let headers = HTTPHeaders(received: fields)
        let hostCount = facts.hostCount

        // Exactly one Host for HTTP/1.1, at most one for HTTP/1.0 (RFC 9112 §3.2).
        if hostCount > 1 { throw .multipleHosts }
        if version == .http1_1 && hostCount == 0 { throw .missingHost }
        let framing = facts.mayHaveFraming ? try Self.framing(of: headers, version: version) : .none
        let expectsContinue =
            facts.mayHaveExpect && version == .http1_1
            && headers["Expect"].map { $0.equalsIgnoringASCIICase("100-continue") } == true
        let wantsKeepAlive = facts.mayHaveFraming ? Self.wantsKeepAlive(version: version, headers: headers) : version == .http1_1
        let head = HTTPRequestHead(
            method: method, target: target, version: version, headers: headers,
            framing: framing, expectsContinue: expectsContinue, wantsKeepAlive: wantsKeepAlive)
        return .head(head, consumed: headEnd.next - start)
    }

    /// The end of the header block: the index after the last header line's content, and the
    /// index after the empty line. Accepts CRLF or bare LF line ends.
    static func findHeadEnd(_ buffer: [UInt8], from start: Int) -> (contentEnd: Int, next: Int)? {
        buffer.withUnsafeBufferPointer { bytes in
            var i = start
            let count = bytes.count
            while i < count {
                if bytes[i] == 0x0A {
                    // An LF followed by an empty line (CRLF or LF) ends the head.
                    if i + 1 < count, bytes[i + 1] == 0x0A { return (i + 1, i + 2) }
                    if i + 2 < count, bytes[i + 1] == 0x0D, bytes[i + 2] == 0x0A { return (i + 1, i + 3) }
                }
                i += 1
            }
            return nil
        }
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
        // method SP request-target SP HTTP-version, exactly two spaces.
        guard let firstSpace = line.firstIndex(of: 0x20),
            let secondSpace = line[(firstSpace + 1)...].firstIndex(of: 0x20),
            !line[(secondSpace + 1)...].contains(0x20)
        else { throw .malformedRequestLine }
        let methodBytes = line[line.startIndex..<firstSpace]
        let targetBytes = line[(firstSpace + 1)..<secondSpace]
        let versionBytes = line[(secondSpace + 1)...]
        guard !methodBytes.isEmpty, !targetBytes.isEmpty else { throw .malformedRequestLine }
        for byte in methodBytes where !isTokenByte(byte) { throw .malformedRequestLine }
        for byte in targetBytes where byte <= 0x20 || byte >= 0x7F { throw .malformedRequestLine }
        // Origin form only (plus `*` for OPTIONS); absolute form is for proxies.
        let first = targetBytes[targetBytes.startIndex]
        guard first == UInt8(ascii: "/") || (first == UInt8(ascii: "*") && targetBytes.count == 1) else {
            throw .malformedRequestLine
        }
        let version: HTTPVersion
        if versionBytes.elementsEqual("HTTP/1.1".utf8) {
            version = .http1_1
        } else if versionBytes.elementsEqual("HTTP/1.0".utf8) {
            version = .http1_0
        } else if versionBytes.starts(with: "HTTP/".utf8) {
            throw .unsupportedVersion
        } else {
            throw .malformedRequestLine
        }
        return (Self.method(methodBytes), String(decoding: targetBytes, as: UTF8.self), version)
    }

    /// The method, sharing the standard methods' strings.
    static func method(_ bytes: ArraySlice<UInt8>) -> HTTPMethod {
        if bytes.elementsEqual("GET".utf8) { return .get }
        if bytes.elementsEqual("POST".utf8) { return .post }
        if bytes.elementsEqual("HEAD".utf8) { return .head }
        return HTTPMethod(rawValue: String(decoding: bytes, as: UTF8.self))
    }

    /// What the field loop noticed on the way, so that framing, Host and Expect are looked up
    /// only in heads that may have them.
    struct FieldFacts {
        var mayHaveFraming = false
        var hostCount = 0
        var mayHaveExpect = false
    }

    /// Where a field line's name and (trimmed) value lie in `buffer`.
    static func parseField(_ buffer: [UInt8], _ line: Range<Int>) throws(HTTPParseError) -> (name: Range<Int>, value: Range<Int>) {
        // obs-fold (a line starting with whitespace) is rejected (RFC 9112 §5.2).
        let bytes = buffer[line]
        guard let first = bytes.first, first != 0x20, first != 0x09,
            let colon = bytes.firstIndex(of: UInt8(ascii: ":"))
        else { throw .malformedHeader }
        guard colon > line.lowerBound else { throw .malformedHeader }
        for byte in buffer[line.lowerBound..<colon] where !isTokenByte(byte) { throw .malformedHeader }
        var valueStart = colon + 1
        var valueEnd = line.upperBound
        while valueStart < valueEnd, buffer[valueStart] == 0x20 || buffer[valueStart] == 0x09 { valueStart += 1 }
        while valueEnd > valueStart, buffer[valueEnd - 1] == 0x20 || buffer[valueEnd - 1] == 0x09 { valueEnd -= 1 }
        for byte in buffer[valueStart..<valueEnd] where byte == 0 || byte == 0x0D || byte == 0x0A {
            throw .malformedHeader
        }
        return (line.lowerBound..<colon, valueStart..<valueEnd)
    }

    /// Whether the 4-byte name at `name` is `Host` in any case.
    static func isHost(_ buffer: [UInt8], _ name: Range<Int>) -> Bool {
        buffer[name].elementsEqual("host".utf8) { $0 | 0x20 == $1 }
    }

    /// How the body is framed (RFC 9112 §6). Every Transfer-Encoding field counts, even an
    /// empty one: falling back to Content-Length when a proxy in front may have read the
    /// message as chunked is how requests get smuggled.
    static func framing(of headers: HTTPHeaders, version: HTTPVersion) throws(HTTPParseError) -> HTTPRequestHead.BodyFraming {
        let lengths = headers.values(for: "Content-Length")
        if headers.contains("Transfer-Encoding") {
            // A message with both is a smuggling attempt or a broken client (RFC 9112 §6.3).
            if !lengths.isEmpty { throw .conflictingFraming }
            // "A server or client that receives an HTTP/1.0 message containing a
            // Transfer-Encoding header field MUST treat the message as if the framing is
            // faulty ... and close the connection" (RFC 9112 §6.1).
            if version == .http1_0 { throw .transferEncodingInHTTP10 }
            let codings = headers.tokens(for: "Transfer-Encoding").filter { !$0.isEmpty }
            if codings.isEmpty { throw .invalidTransferEncoding }
            guard codings == ["chunked"] else { throw .unsupportedTransferEncoding }
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

    /// Whether the connection may stay open after the request (RFC 9112 §9.3).
    static func wantsKeepAlive(version: HTTPVersion, headers: HTTPHeaders) -> Bool {
        let tokens = headers.tokens(for: "Connection")
        switch version {
        case .http1_1: return !tokens.contains("close")
        case .http1_0: return tokens.contains("keep-alive")
        }
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
