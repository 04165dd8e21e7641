/// Writes a response head (status line, `Date`, the handler's fields, framing fields) as bytes.
///
/// This runs once per response, so it appends whole UTF-8 buffers rather than byte by byte and
/// sizes the buffer once. A body small enough to share the buffer is appended to it, so the
/// response leaves in one send without the buffer growing on the way.
struct ResponseHeadEncoder {
    /// Bodies up to this size are copied behind the head; larger ones go as their own chunk.
    static let inlineBodyLimit = 64 * 1024

    /// `Date: <IMF-fixdate>\r\n`, refreshed by the event loop once a second.
    var dateLine: [UInt8]

    /// The head, and whether the body bytes were appended to it.
    func encode(_ response: HTTPResponse, version: HTTPVersion, keepAlive requested: Bool, sendsBody: Bool)
        -> (bytes: [UInt8], bodyIncluded: Bool)
    {
        var head: [UInt8] = []
        let bodyIncluded = encode(response, version: version, keepAlive: requested, sendsBody: sendsBody, into: &head)
        return (head, bodyIncluded)
    }

    /// Appends the head (and a small body) to `head`, which grows at most once: the event loop
    /// passes a buffer it recycles, so a response that leaves in one send allocates nothing.
    /// Returns whether the body bytes were appended.
    func encode(
        _ response: HTTPResponse, version: HTTPVersion, keepAlive requested: Bool, sendsBody: Bool, into head: inout [UInt8]
    ) -> Bool {
        var capacity = head.count + 64 + dateLine.count
        for field in response.headers { capacity += field.name.utf8.count + field.value.utf8.count + 4 }
        var inlineBody: [UInt8]?
        if sendsBody, case let .bytes(body) = response.body, body.count <= Self.inlineBodyLimit {
            inlineBody = body
            capacity += body.count
        }
        head.reserveCapacity(capacity)
        head.appendUTF8(version == .http1_0 ? "HTTP/1.0 " : "HTTP/1.1 ")
        head.appendDecimal(response.status.code)
        head.append(0x20)
        head.appendUTF8(response.status.reasonPhrase)
        head.append(contentsOf: [0x0D, 0x0A])
        head.append(contentsOf: dateLine)
        for field in response.headers {
            // Framing headers are the server's business; CR/LF in a value would split the head.
            if Self.isFramingHeader(field.name) { continue }
            head.appendUTF8(field.name)
            head.append(contentsOf: [0x3A, 0x20])
            head.appendFieldValue(field.value)
            head.append(contentsOf: [0x0D, 0x0A])
        }
        var keepAlive = requested
        switch response.body {
        case .empty:
            if response.status.allowsBody { head.appendUTF8("Content-Length: 0\r\n") }
        case let .bytes(bytes):
            // A 304 may state the length of the representation it stands for (RFC 9110 §15.4.5).
            if response.status.allowsBody || (response.status.code == 304 && !bytes.isEmpty) {
                head.appendUTF8("Content-Length: ")
                head.appendDecimal(bytes.count)
                head.append(contentsOf: [0x0D, 0x0A])
            }
        case let .file(file):
            head.appendUTF8("Content-Length: ")
            head.appendDecimal(file.length)
            head.append(contentsOf: [0x0D, 0x0A])
        case .stream:
            if version == .http1_1 {
                head.appendUTF8("Transfer-Encoding: chunked\r\n")
            } else {
                keepAlive = false  // HTTP/1.0: the end of the body is the end of the connection.
            }
        }
        if !keepAlive {
            head.appendUTF8("Connection: close\r\n")
        } else if version == .http1_0 {
            head.appendUTF8("Connection: keep-alive\r\n")
        }
        head.append(contentsOf: [0x0D, 0x0A])
        if let inlineBody { head.append(contentsOf: inlineBody) }
        return inlineBody != nil
    }

    static func dateLine(secondsSince1970 seconds: Int) -> [UInt8] {
        Array("Date: \(HTTPDate.format(secondsSince1970: seconds))\r\n".utf8)
    }

    /// `Content-Length`, `Transfer-Encoding`, `Connection` and `Date` are the server's to write.
    /// (First-letter check first: this runs for every header of every response.)
    static func isFramingHeader(_ name: String) -> Bool {
        switch name.utf8.first.map({ $0 | 0x20 }) {
        case UInt8(ascii: "c"): name.equalsIgnoringASCIICase("Content-Length") || name.equalsIgnoringASCIICase("Connection")
        case UInt8(ascii: "t"): name.equalsIgnoringASCIICase("Transfer-Encoding")
        case UInt8(ascii: "d"): name.equalsIgnoringASCIICase("Date")
        default: false
        }
    }
}

extension Array where Element == UInt8 {
    /// Appends the string's UTF-8 bytes in one copy when they are contiguous (native strings).
    mutating func appendUTF8(_ string: String) {
        let copied: Void? = string.utf8.withContiguousStorageIfAvailable { append(contentsOf: $0) }
        if copied == nil { append(contentsOf: string.utf8) }
    }

    /// Appends a header field value, dropping CR and LF (which would end the field early).
    mutating func appendFieldValue(_ value: String) {
        let copied: Void? = value.utf8.withContiguousStorageIfAvailable { bytes in
            if bytes.contains(where: { $0 == 0x0D || $0 == 0x0A }) {
                for byte in bytes where byte != 0x0D && byte != 0x0A { append(byte) }
            } else {
                append(contentsOf: bytes)
            }
        }
        if copied == nil {
            for byte in value.utf8 where byte != 0x0D && byte != 0x0A { append(byte) }
        }
    }

    /// Appends a non-negative integer in decimal without going through a String.
    mutating func appendDecimal(_ value: Int) {
        precondition(value >= 0, "appendDecimal takes lengths and status codes")
        var divisor = 1
        while value / divisor >= 10 { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            append(UInt8(ascii: "0") + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }
}
