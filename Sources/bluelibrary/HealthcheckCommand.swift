#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// `bluelibrary healthcheck`: asks the local server's `/readyz` and exits 0 when it answers
/// 200, 1 otherwise. Container images have no curl, so the binary checks itself
/// (`HEALTHCHECK CMD ["bluelibrary", "healthcheck"]`).
enum HealthcheckCommand {
    static func run(_ arguments: [String]) -> Never {
        let environment = ProcessInfo.processInfo.environment
        var port = Int(environment["BLUELIBRARY_PORT"] ?? "") ?? 8080
        var path = "/readyz"
        var words = arguments[...]
        while let word = words.popFirst() {
            switch word {
            case "--port": port = words.popFirst().flatMap(Int.init) ?? -1
            case "--path": path = words.popFirst() ?? path
            case "--help", "-h":
                print("Usage: bluelibrary healthcheck [--port PORT] [--path /readyz]\nExits 0 when GET 127.0.0.1:PORT PATH answers 200 within 3 s.")
                exit(0)
            default: fail("unknown healthcheck option '\(word)'")
            }
        }
        guard (1...65535).contains(port) else { fail("healthcheck needs a port from 1 to 65535") }
        let status = probe(port: port, path: path)
        if status == 200 { exit(0) }
        FileHandle.standardError.write(Data("bluelibrary: healthcheck: \(status.map { "HTTP \($0)" } ?? "no answer") from 127.0.0.1:\(port)\(path)\n".utf8))
        exit(1)
    }

    /// The status code of `GET path`, or nil when nothing sensible came back in time.
    static func probe(port: Int, path: String) -> Int? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 3, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nUser-Agent: bluelibrary-healthcheck\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else { return nil }
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n >= 12 else { return nil }
        // "HTTP/1.1 200 ..."
        let line = String(decoding: buffer[0..<n], as: UTF8.self)
        let parts = line.split(separator: " ", maxSplits: 2)
        return parts.count >= 2 ? Int(parts[1]) : nil
    }
}
