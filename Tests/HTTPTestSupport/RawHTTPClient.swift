#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A blocking TCP client for tests that must control every byte on the wire: partial heads,
/// pipelining, stalls. Receives time out so a broken server fails a test instead of hanging it.
public final class RawHTTPClient {
    public struct Response {
        public var statusLine: String
        public var status: Int
        public var headers: [(String, String)]
        public var body: [UInt8]

        public func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
        public var text: String { String(decoding: body, as: UTF8.self) }
        public func json() throws -> [String: Any] {
            try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] ?? [:]
        }
    }

    public struct ClientError: Error, CustomStringConvertible {
        public let description: String
    }

    public let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to `host:port`; `source` binds the local end first (e.g. 127.0.0.2, to look
    /// like another client on loopback).
    public init(port: Int, host: String = "127.0.0.1", source: String? = nil, receiveTimeout: Double = 10) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientError(description: "socket failed") }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                Glibc.close(fd)
                throw ClientError(description: "bind to \(source) failed: errno \(errno)")
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            Glibc.close(fd)
            throw ClientError(description: "connect to \(host):\(port) failed: errno \(code)")
        }
        setReceiveTimeout(receiveTimeout)
    }

    deinit { Glibc.close(fd) }

    public func setReceiveTimeout(_ seconds: Double) {
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw ClientError(description: "send failed: errno \(errno)") }
            offset += n
        }
    }

    /// Reads more bytes; returns false on EOF. Throws on timeout or error.
    @discardableResult
    public func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n > 0 {
            buffer.append(contentsOf: chunk[0..<n])
            return true
        }
        if n == 0 { return false }
        throw ClientError(description: errno == EAGAIN || errno == EWOULDBLOCK ? "receive timed out" : "recv failed: errno \(errno)")
    }

    /// True when the server has closed the connection (EOF with nothing buffered).
    public func isClosedByServer() -> Bool {
        guard buffer.isEmpty else { return false }
        return (try? fill()) == false
    }

    /// Reads one response. `head` says the request was HEAD (no body follows).
    public func readResponse(head: Bool = false) throws -> Response {
        let headEnd = try readUntil([13, 10, 13, 10])
        let headText = String(decoding: buffer[0..<headEnd], as: UTF8.self)
        buffer.removeFirst(headEnd + 4)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else { throw ClientError(description: "bad status line: \(statusLine)") }
        let headers = lines.map { line -> (String, String) in
            let colon = line.firstIndex(of: ":")!
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var response = Response(statusLine: statusLine, status: status, headers: headers, body: [])
        if head || status == 204 || status == 304 || (100..<200).contains(status) { return response }
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            response.body = try readChunkedBody()
        } else if let length = response.header("Content-Length").flatMap(Int.init) {
            while buffer.count < length {
                guard try fill() else { throw ClientError(description: "EOF inside body") }
            }
            response.body = Array(buffer[0..<length])
            buffer.removeFirst(length)
        } else {
            while try fill() {}
            response.body = buffer
            buffer = []
        }
        return response
    }

    /// Reads one chunk of a chunked body (for streams); nil at the last chunk.
    public func readChunk() throws -> [UInt8]? {
        let lineEnd = try readUntil([13, 10])
        let sizeText = String(decoding: buffer[0..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
        guard let size = Int(sizeText, radix: 16) else { throw ClientError(description: "bad chunk size '\(sizeText)'") }
        buffer.removeFirst(lineEnd + 2)
        if size == 0 {
            _ = try readUntil([13, 10])
            buffer.removeFirst(2)
            return nil
        }
        while buffer.count < size + 2 {
            guard try fill() else { throw ClientError(description: "EOF inside chunk") }
        }
        let chunk = Array(buffer[0..<size])
        buffer.removeFirst(size + 2)
        return chunk
    }

    private func readChunkedBody() throws -> [UInt8] {
        var body: [UInt8] = []
        while let chunk = try readChunk() { body += chunk }
        return body
    }

    private func readUntil(_ marker: [UInt8]) throws -> Int {
        while true {
            if let index = find(marker) { return index }
            guard try fill() else { throw ClientError(description: "EOF before \(marker)") }
        }
    }

    private func find(_ marker: [UInt8]) -> Int? {
        guard buffer.count >= marker.count else { return nil }
        for i in 0...(buffer.count - marker.count) where buffer[i] == marker[0] {
            if Array(buffer[i..<(i + marker.count)]) == marker { return i }
        }
        return nil
    }

    /// One request on a fresh connection.
    public static func request(
        port: Int, method: String = "GET", path: String, headers: [String: String] = [:], body: [UInt8] = []
    ) throws -> Response {
        let client = try RawHTTPClient(port: port)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || ["POST", "PUT", "PATCH"].contains(method) { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try client.send(Array(head.utf8) + body)
        return try client.readResponse(head: method == "HEAD")
    }
}
