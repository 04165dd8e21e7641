#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryServer
import Foundation

/// `bluelibrary healthcheck`: asks the local server's `/readyz` and exits 0 when it answers
/// 200, 1 otherwise. Container images have no curl, so the binary checks itself
/// (`HEALTHCHECK CMD ["bluelibrary", "healthcheck"]`).
///
/// Where it asks: `--port` when given; else where the server says it listens (the
/// ``ListeningAddressFile`` in the data directory, so `serve --port N` or `--host` need nothing
/// more); else `BLUELIBRARY_PORT` (8080) on 127.0.0.1. The data directory is `--data-dir`,
/// `BLUELIBRARY_DATA_DIR` or `./data`, as for `serve`.
enum HealthcheckCommand {
    static let usage = """
        Usage: bluelibrary healthcheck [--port PORT] [--data-dir DIR] [--path /readyz]
        Exits 0 when GET PATH answers 200 within 3 s. Asks the address the server wrote to its data
        directory (DIR/listening-<hostname>.json), or 127.0.0.1:PORT when --port is given or there is
        no such file (PORT: BLUELIBRARY_PORT, else 8080).
        """

    static func run(_ arguments: [String]) -> Never {
        let environment = ProcessInfo.processInfo.environment
        var port: Int?
        var dataDirectory = environment["BLUELIBRARY_DATA_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "./data"
        var path = "/readyz"
        var words = arguments[...]
        while let word = words.popFirst() {
            switch word {
            case "--port": port = words.popFirst().flatMap(Int.init) ?? -1
            case "--data-dir": dataDirectory = words.popFirst() ?? dataDirectory
            case "--path": path = words.popFirst() ?? path
            case "--help", "-h":
                print(usage)
                exit(0)
            default: fail("unknown healthcheck option '\(word)'")
            }
        }
        let target = self.target(port: port, dataDirectory: dataDirectory, environment: environment)
        guard (1...65535).contains(target.port) else { fail("healthcheck needs a port from 1 to 65535") }
        let status = probe(host: target.host, port: target.port, path: path)
        if status == 200 { exit(0) }
        let shown = target.host.contains(":") ? "[\(target.host)]" : target.host
        FileHandle.standardError.write(Data("bluelibrary: healthcheck: \(status.map { "HTTP \($0)" } ?? "no answer") from \(shown):\(target.port)\(path) (\(target.source))\n".utf8))
        exit(1)
    }

    /// The address to probe and where it came from (for the failure message).
    static func target(port: Int?, dataDirectory: String, environment: [String: String]) -> (host: String, port: Int, source: String) {
        if let port { return ("127.0.0.1", port, "--port") }
        let file = ListeningAddressFile.path(dataDirectory: dataDirectory)
        if let announced = ListeningAddressFile.read(from: file) {
            return (announced.probeHost, announced.port, file)
        }
        if let text = environment["BLUELIBRARY_PORT"], let value = Int(text) {
            return ("127.0.0.1", value, "BLUELIBRARY_PORT; no \(file)")
        }
        return ("127.0.0.1", 8080, "default port; no \(file)")
    }

    /// The status code of `GET path` from `host` (an IPv4 or IPv6 address), or nil when
    /// nothing sensible came back in time.
    static func probe(host: String, port: Int, path: String) -> Int? {
        let isIPv6 = host.contains(":")
        let fd = socket(isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 3, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected: Int32
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { return nil }
            connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
            connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
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
