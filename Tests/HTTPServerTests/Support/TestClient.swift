import Foundation
#if canImport(Glibc)
import Glibc
#endif

struct TestClientError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A response as it came off the wire.
struct RawResponse {
    var version: String
    var status: Int
    var reason: String
    var headers: [(name: String, value: String)]
    var body: [UInt8]
    /// The chunks of a chunked body, in order (nil when the body was not chunked).
    var chunks: [[UInt8]]?

    /// The first value of a header, case-insensitively.
    subscript(header name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    func count(of name: String) -> Int {
        headers.filter { $0.name.lowercased() == name.lowercased() }.count
    }

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The `Connection` header's tokens, lowercased.
    var connectionTokens: [String] {
        (self[header: "Connection"] ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
    }
}

/// A small blocking HTTP/1.1 client over a raw TCP socket, with receive timeouts so a test
/// that goes wrong fails instead of hanging.
final class TestClient {
    let fd: Int32
    /// Received bytes not yet consumed by a parse.
    private(set) var buffer: [UInt8] = []
    private var timeout: Double

    init(port: Int, timeout: Double = 5, receiveBufferSize: Int32? = nil) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestClientError("socket failed: errno \(errno)") }
        if var size = receiveBufferSize {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        let result = Self.connect(fd, port: port)
        guard result == 0 else {
            Glibc.close(fd)
            throw TestClientError("connect to port \(port) failed: \(String(cString: strerror(result)))")
        }
        self.fd = fd
        self.timeout = timeout
        setReceiveTimeout(timeout)
    }

    deinit { Glibc.close(fd) }

    /// Connects and closes at once. Returns 0 on success, otherwise the errno of `connect`.
    static func probe(port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return errno }
        defer { Glibc.close(fd) }
        return connect(fd, port: port)
    }

    private static func connect(_ fd: Int32, port: Int) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return rc == 0 ? 0 : errno
    }

    private func setReceiveTimeout(_ seconds: Double) {
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    // MARK: Sending

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw TestClientError("send failed: \(String(cString: strerror(errno)))")
            }
            sent += n
        }
    }

    func shutdownWrite() { Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// Bytes sent but not yet acknowledged by the peer's kernel (SIOCOUTQ): 0 means all of
    /// them sit in the server's receive queue, whether or not the server has read them.
    var unacknowledgedBytes: Int {
        var count: Int32 = 0
        let siocoutq: UInt = 0x5411  // SIOCOUTQ == TIOCOUTQ on Linux
        guard ioctl(fd, siocoutq, &count) == 0 else { return -1 }
        return Int(count)
    }

    /// Waits (up to `seconds`) until the server's kernel has acknowledged everything sent.
    func waitUntilAcknowledged(seconds: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if unacknowledgedBytes == 0 { return true }
            usleep(1000)
        }
        return false
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
        case .eof: throw TestClientError("connection closed while reading \(what); have \(describeBuffer())")
        case .reset: throw TestClientError("connection reset while reading \(what); have \(describeBuffer())")
        case .timeout: throw TestClientError("timed out after \(timeout)s reading \(what); have \(describeBuffer())")
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
    func readResponse(isHead: Bool = false) throws -> RawResponse {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let status = Int(parts[1]) else {
            throw TestClientError("bad status line \(statusLine.debugDescription)")
        }
        var headers: [(name: String, value: String)] = []
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { throw TestClientError("bad header line \(line.debugDescription)") }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var response = RawResponse(
            version: String(parts[0]), status: status, reason: parts.count > 2 ? String(parts[2]) : "",
            headers: headers, body: [], chunks: nil)
        if isHead || (100..<200).contains(status) || status == 204 || status == 304 { return response }
        if response[header: "Transfer-Encoding"]?.lowercased() == "chunked" {
            var chunks: [[UInt8]] = []
            while true {
                let sizeLine = try readLine()
                let hex = sizeLine.split(separator: ";").first.map(String.init) ?? ""
                guard let size = Int(hex.trimmingCharacters(in: .whitespaces), radix: 16) else {
                    throw TestClientError("bad chunk size line \(sizeLine.debugDescription)")
                }
                if size == 0 {
                    while try !readLine().isEmpty {}  // trailers
                    break
                }
                chunks.append(try readExactly(size))
                let end = try readLine()
                guard end.isEmpty else { throw TestClientError("chunk not followed by CRLF: \(end.debugDescription)") }
            }
            response.chunks = chunks
            response.body = chunks.flatMap { $0 }
        } else if let length = response[header: "Content-Length"] {
            guard let n = Int(length) else { throw TestClientError("bad Content-Length \(length)") }
            response.body = try readExactly(n)
        } else {
            // Delimited by the end of the connection.
            reading: while true {
                switch fill() {
                case .data: continue
                case .eof, .reset: break reading
                case .timeout: throw TestClientError("timed out reading a close-delimited body")
                }
            }
            response.body = take(buffer.count)
        }
        return response
    }

    /// How the server ended the connection.
    enum Ending: Equatable { case eof, reset, timeout }

    /// Reads (keeping what arrives in `buffer`) until the connection ends: an orderly FIN
    /// (`eof`), a reset, or no byte for the receive timeout.
    func readUntilEnd() -> Ending {
        while true {
            switch fill() {
            case .data: continue
            case .eof: return .eof
            case .reset: return .reset
            case .timeout: return .timeout
            }
        }
    }

    /// Sends `bytes`; false if the connection failed on the way (reset or broken pipe).
    func trySend(_ bytes: [UInt8]) -> Bool { (try? send(bytes)) != nil }

    /// Waits up to `seconds` for the server to close the connection. Bytes that arrive
    /// meanwhile stay in `buffer`. True if it closed (EOF or reset).
    func waitForClose(within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        setReceiveTimeout(0.05)
        defer { setReceiveTimeout(timeout) }
        while Date() < deadline {
            switch fill() {
            case .eof, .reset: return true
            case .data, .timeout: continue
            }
        }
        return false
    }

    /// True if nothing arrives (and the connection stays open) for `seconds`.
    func staysQuiet(for seconds: Double) -> Bool {
        let before = buffer.count
        let deadline = Date().addingTimeInterval(seconds)
        setReceiveTimeout(0.05)
        defer { setReceiveTimeout(timeout) }
        while Date() < deadline {
            switch fill() {
            case .eof, .reset: return false
            case .data: return false
            case .timeout: continue
            }
        }
        return buffer.count == before
    }
}
