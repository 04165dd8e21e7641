#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A blocking HTTP/1.1 client over a raw TCP socket, for tests that must control every byte on
/// the wire: partial heads, pipelining, stalls, half-closes, how the server ends a connection.
/// Receives time out, so a server that goes wrong fails a test instead of hanging it.
///
/// The one raw client of the test suite: the HTTPServer tests, the app's end-to-end tests and
/// the test proxies all use it.
public final class RawHTTPClient {
    /// A response as it came off the wire.
    public struct Response {
        public var statusLine: String
        public var version: String
        public var status: Int
        public var reason: String
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]
        /// The chunks of a chunked body, in order (nil when the body was not chunked).
        public var chunks: [[UInt8]]?

        /// The first value of a header, case-insensitively.
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        /// How many times a header occurs.
        public func count(of name: String) -> Int {
            headers.filter { $0.name.lowercased() == name.lowercased() }.count
        }

        public var text: String { String(decoding: body, as: UTF8.self) }

        public func json() throws -> [String: Any] {
            try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] ?? [:]
        }

        /// The `Connection` header's tokens, lowercased.
        public var connectionTokens: [String] {
            (header("Connection") ?? "").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            }
        }
    }

    public struct ClientError: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
        public init(_ description: String) { self.description = description }
    }

    public let fd: Int32
    /// Received bytes not yet consumed by a parse.
    public private(set) var buffer: [UInt8] = []
    private let receiveTimeout: Double

    /// Connects to `host:port`; `source` binds the local end first (e.g. 127.0.0.2, to look
    /// like another client on loopback); `receiveBufferSize` sets SO_RCVBUF before connecting.
    public init(
        port: Int, host: String = "127.0.0.1", source: String? = nil, receiveTimeout: Double = 10,
        receiveBufferSize: Int32? = nil
    ) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientError("socket failed: errno \(errno)") }
        if var size = receiveBufferSize {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                let code = errno
                Glibc.close(fd)
                throw ClientError("bind to \(source) failed: errno \(code)")
            }
        }
        let result = Self.connect(fd, host: host, port: port)
        guard result == 0 else {
            Glibc.close(fd)
            throw ClientError("connect to \(host):\(port) failed: \(String(cString: strerror(result)))")
        }
        self.fd = fd
        self.receiveTimeout = receiveTimeout
        setReceiveTimeout(receiveTimeout)
    }

    deinit { Glibc.close(fd) }

    /// Connects and closes at once. Returns 0 on success, otherwise the errno of `connect`.
    public static func probe(port: Int, host: String = "127.0.0.1") -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return errno }
        defer { Glibc.close(fd) }
        return connect(fd, host: host, port: port)
    }

    private static func connect(_ fd: Int32, host: String, port: Int) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return rc == 0 ? 0 : errno
    }

    public func setReceiveTimeout(_ seconds: Double) {
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    // MARK: Sending

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    public func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw ClientError("send failed: \(String(cString: strerror(errno)))")
            }
            sent += n
        }
    }

    /// Sends `bytes`; false if the connection failed on the way (reset or broken pipe).
    public func trySend(_ bytes: [UInt8]) -> Bool { (try? send(bytes)) != nil }

    public func shutdownWrite() { Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// Bytes sent but not yet acknowledged by the peer's kernel (SIOCOUTQ): 0 means all of
    /// them sit in the server's receive queue, whether or not the server has read them.
    public var unacknowledgedBytes: Int {
        var count: Int32 = 0
        let siocoutq: UInt = 0x5411  // SIOCOUTQ == TIOCOUTQ on Linux
        guard ioctl(fd, siocoutq, &count) == 0 else { return -1 }
        return Int(count)
    }

    /// Waits (up to `seconds`) until the server's kernel has acknowledged everything sent.
    public func waitUntilAcknowledged(seconds: Double = 5) -> Bool {
        eventually(timeout: .milliseconds(Int64(seconds * 1000))) { unacknowledgedBytes == 0 }
    }

    // MARK: Receiving

    private enum Outcome { case data, eof, timeout, reset }

    /// One `recv` into the buffer.
    private func fill() -> Outcome {
        var scratch = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                buffer.append(contentsOf: scratch[0..<n])
                return .data
            }
            if n == 0 { return .eof }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .timeout
            default: return .reset
            }
        }
    }

    private func fillOrThrow(_ what: String) throws {
        switch fill() {
        case .data: return
        case .eof: throw ClientError("connection closed while reading \(what); have \(describeBuffer())")
        case .reset: throw ClientError("connection reset while reading \(what); have \(describeBuffer())")
        case .timeout: throw ClientError("timed out after \(receiveTimeout)s reading \(what); have \(describeBuffer())")
        }
    }

    private func describeBuffer() -> String {
        "\(buffer.count) bytes: \(String(decoding: buffer.prefix(200), as: UTF8.self).debugDescription)"
    }

    private func take(_ n: Int) -> [UInt8] {
        let out = Array(buffer[0..<n])
        buffer.removeFirst(n)
        return out
    }

    private func readLine() throws -> String {
        while true {
            if let lf = buffer.firstIndex(of: 0x0A) {
                var line = take(lf + 1)
                line.removeLast()
                if line.last == 0x0D { line.removeLast() }
                return String(decoding: line, as: UTF8.self)
            }
            try fillOrThrow("a line")
        }
    }

    private func readExactly(_ n: Int) throws -> [UInt8] {
        while buffer.count < n { try fillOrThrow("\(n) body bytes") }
        return take(n)
    }

    /// Reads one response. `isHead`: the request was HEAD, so no body follows whatever the
    /// headers say.
    public func readResponse(isHead: Bool = false) throws -> Response {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let status = Int(parts[1]) else {
            throw ClientError("bad status line \(statusLine.debugDescription)")
        }
        var headers: [(name: String, value: String)] = []
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { throw ClientError("bad header line \(line.debugDescription)") }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var response = Response(
            statusLine: statusLine, version: String(parts[0]), status: status,
            reason: parts.count > 2 ? String(parts[2]) : "", headers: headers, body: [], chunks: nil)
        if isHead || (100..<200).contains(status) || status == 204 || status == 304 { return response }
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            var chunks: [[UInt8]] = []
            while let chunk = try readChunk() { chunks.append(chunk) }
            response.chunks = chunks
            response.body = chunks.flatMap { $0 }
        } else if let length = response.header("Content-Length") {
            guard let n = Int(length) else { throw ClientError("bad Content-Length \(length)") }
            response.body = try readExactly(n)
        } else {
            // Delimited by the end of the connection.
            reading: while true {
                switch fill() {
                case .data: continue
                case .eof, .reset: break reading
                case .timeout: throw ClientError("timed out reading a close-delimited body")
                }
            }
            response.body = take(buffer.count)
        }
        return response
    }

    /// Reads one chunk of a chunked body (for streams); nil at the last chunk (after its
    /// trailers).
    public func readChunk() throws -> [UInt8]? {
        let sizeLine = try readLine()
        let hex = sizeLine.split(separator: ";").first.map(String.init) ?? ""
        guard let size = Int(hex.trimmingCharacters(in: .whitespaces), radix: 16) else {
            throw ClientError("bad chunk size line \(sizeLine.debugDescription)")
        }
        if size == 0 {
            while try !readLine().isEmpty {}  // trailers
            return nil
        }
        let chunk = try readExactly(size)
        let end = try readLine()
        guard end.isEmpty else { throw ClientError("chunk not followed by CRLF: \(end.debugDescription)") }
        return chunk
    }

    /// Reads until at least `count` bytes are buffered (they stay there for the next read): a
    /// sign the server has started answering. False if the connection ends or the receive
    /// timeout passes first.
    public func waitForBytes(_ count: Int = 1) -> Bool {
        while buffer.count < count {
            guard fill() == .data else { return false }
        }
        return true
    }

    /// How the server ended the connection.
    public enum Ending: Equatable { case eof, reset, timeout }

    /// Reads (keeping what arrives in `buffer`) until the connection ends: an orderly FIN
    /// (`eof`), a reset, or no byte for the receive timeout.
    public func readUntilEnd() -> Ending {
        while true {
            switch fill() {
            case .data: continue
            case .eof: return .eof
            case .reset: return .reset
            case .timeout: return .timeout
            }
        }
    }

    /// True when the server has closed the connection: nothing unread is buffered and the next
    /// read (within the receive timeout) sees an orderly end.
    public func isClosedByServer() -> Bool {
        guard buffer.isEmpty else { return false }
        return fill() == .eof
    }

    /// Waits up to `seconds` for the server to close the connection. Bytes that arrive
    /// meanwhile stay in `buffer`. True if it closed (EOF or reset).
    public func waitForClose(within seconds: Double) -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        setReceiveTimeout(0.05)
        defer { setReceiveTimeout(receiveTimeout) }
        while ContinuousClock.now < deadline {
            switch fill() {
            case .eof, .reset: return true
            case .data, .timeout: continue
            }
        }
        return false
    }

    /// One request on a fresh connection.
    public static func request(
        port: Int, method: String = "GET", path: String, headers: [String: String] = [:], body: [UInt8] = [],
        receiveTimeout: Double = 10
    ) throws -> Response {
        let client = try RawHTTPClient(port: port, receiveTimeout: receiveTimeout)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || ["POST", "PUT", "PATCH"].contains(method) { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try client.send(Array(head.utf8) + body)
        return try client.readResponse(isHead: method == "HEAD")
    }
}

extension RawHTTPClient.Response {
    /// A response that did not come over a socket (an app answering in process): HTTP/1.1,
    /// the reason phrase as given, not chunked.
    public init(status: Int, reason: String, headers: [(name: String, value: String)], body: [UInt8]) {
        self.init(statusLine: "HTTP/1.1 \(status) \(reason)", version: "HTTP/1.1", status: status, reason: reason,
                  headers: headers, body: body, chunks: nil)
    }
}
