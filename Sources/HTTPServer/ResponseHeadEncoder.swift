/// Writes a response head (status line, `Date`, the handler's fields, framing fields) as bytes.
///
/// This runs once per response, so it writes whole UTF-8 runs through a pointer and appends
/// the head to the output in one copy. A body small enough to share the buffer is appended to it, so the
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
    /// The head is written through a pointer into scratch space sized for it and appended in
    /// one copy (appending piece by piece cost more than the rest of a 304 together).
    /// Returns whether the body bytes were appended.
    func encode(
        _ response: HTTPResponse, version: HTTPVersion, keepAlive requested: Bool, sendsBody: Bool, into head: inout [UInt8]
    ) -> Bool {
        let fields = response.headers.fields
        let reason = response.status.reasonPhrase
        // An upper bound: the status line is at most 31 bytes + the reason (a code of up to 19
        // digits), Content-Length 37, Connection 24, the final CRLF 2.
        var headBound = 96 + reason.utf8.count + dateLine.count
        for field in fields { headBound += field.name.utf8.count + field.value.utf8.count + 4 }
        var inlineBody: [UInt8]?
        if sendsBody, case let .bytes(body) = response.body, body.count <= Self.inlineBodyLimit {
            inlineBody = body
        }
        var keepAlive = requested
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: headBound) { scratch in
            var writer = HeadWriter(scratch)
            writer.write(version == .http1_0 ? "HTTP/1.0 " : "HTTP/1.1 ")
            writer.writeDecimal(response.status.code)
            writer.write(UInt8(ascii: " "))
            writer.write(reason)
            writer.write("\r\n")
            writer.write(dateLine)
            for field in fields {
                // Framing headers are the server's business; CR/LF in a value would split the head.
                if Self.isFramingHeader(field.name) { continue }
                writer.write(field.name)
                writer.write(": ")
                writer.writeFieldValue(field.value)
                writer.write("\r\n")
            }
            switch response.body {
            case .empty:
                if response.status.allowsBody { writer.write("Content-Length: 0\r\n") }
            case .unknownLength:
                if sendsBody { writer.write("Content-Length: 0\r\n") }
            case let .bytes(bytes):
                // A 304 may state the length of the representation it stands for (RFC 9110 §15.4.5).
                if response.status.allowsBody || (response.status.code == 304 && !bytes.isEmpty) {
                    writer.write("Content-Length: ")
                    writer.writeDecimal(bytes.count)
                    writer.write("\r\n")
                }
            case let .file(file):
                writer.write("Content-Length: ")
                writer.writeDecimal(file.length)
                writer.write("\r\n")
            case .stream:
                if version == .http1_1 {
                    writer.write("Transfer-Encoding: chunked\r\n")
                } else {
                    keepAlive = false  // HTTP/1.0: the end of the body is the end of the connection.
                }
            }
            if !keepAlive {
                writer.write("Connection: close\r\n")
            } else if version == .http1_0 {
                writer.write("Connection: keep-alive\r\n")
            }
            writer.write("\r\n")
            head.reserveCapacity(head.count + writer.count + (inlineBody?.count ?? 0))
            head.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[0..<writer.count]))
        }
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

/// Writes bytes through a pointer into scratch space that the caller sized as an upper bound
/// (``ResponseHeadEncoder`` counts every field); `count` is how much was written.
struct HeadWriter {
    private let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private(set) var count = 0

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        base = buffer.baseAddress!
        capacity = buffer.count
    }

    private mutating func copy(_ source: UnsafeRawPointer, _ length: Int) {
        precondition(count + length <= capacity, "response head larger than its computed bound")
        (base + count).initialize(from: source.assumingMemoryBound(to: UInt8.self), count: length)
        count += length
    }

    mutating func write(_ byte: UInt8) {
        precondition(count < capacity, "response head larger than its computed bound")
        base[count] = byte
        count += 1
    }

    mutating func write(_ text: StaticString) {
        copy(text.utf8Start, text.utf8CodeUnitCount)
    }

    mutating func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { if let address = $0.baseAddress { copy(address, $0.count) } }
    }

    mutating func write(_ text: String) {
        let copied: Void? = text.utf8.withContiguousStorageIfAvailable { if let address = $0.baseAddress { copy(address, $0.count) } }
        if copied == nil { for byte in text.utf8 { write(byte) } }
    }

    /// A header field value without CR and LF (which would end the field early).
    mutating func writeFieldValue(_ value: String) {
        let copied: Void? = value.utf8.withContiguousStorageIfAvailable { bytes in
            if bytes.contains(where: { $0 == 0x0D || $0 == 0x0A }) {
                for byte in bytes where byte != 0x0D && byte != 0x0A { write(byte) }
            } else if let address = bytes.baseAddress {
                copy(address, bytes.count)
            }
        }
        if copied == nil {
            for byte in value.utf8 where byte != 0x0D && byte != 0x0A { write(byte) }
        }
    }

    /// A non-negative integer in decimal.
    mutating func writeDecimal(_ value: Int) {
        precondition(value >= 0, "writeDecimal takes lengths and status codes")
        var digits = 1
        var rest = value
        while rest >= 10 {
            rest /= 10
            digits += 1
        }
        precondition(count + digits <= capacity, "response head larger than its computed bound")
        rest = value
        for index in stride(from: count + digits - 1, through: count, by: -1) {
            base[index] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
        count += digits
    }
}
