import Essentials
#if canImport(Glibc)
import Glibc
import CLinux
#endif

/// A non-blocking TCP listening socket (IPv4 or IPv6), owned: closed in `deinit`.
///
/// Every event loop gets its own socket bound to the same address with `SO_REUSEPORT`, so the
/// kernel spreads new connections across loops without a shared accept lock.
final class ListeningSocket {
    let fd: Int32
    let port: Int

    init(host: String, port: Int, backlog: Int32 = 1024) throws {
        let address = try SocketAddress(host: host, port: port)
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SocketError("socket") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = address.withSockAddr { bind(fd, $0, $1) }
        guard bound == 0 else {
            let error = SocketError("bind \(host):\(port)")
            close(fd)
            throw error
        }
        guard listen(fd, backlog) == 0 else {
            let error = SocketError("listen")
            close(fd)
            throw error
        }
        self.fd = fd
        self.port = SocketAddress.localPort(of: fd) ?? port
    }

    deinit { close(fd) }
}

/// An IPv4 or IPv6 socket address.
struct SocketAddress {
    private var storage = sockaddr_storage()
    let family: Int32
    let length: socklen_t

    init(host: String, port: Int) throws {
        guard (0...65535).contains(port) else { throw SocketError("port \(port) out of range", errno: EINVAL) }
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(port).bigEndian)
            family = AF_INET
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeMutableBytes(of: &storage) { raw in
                withUnsafeBytes(of: v4) { raw.copyMemory(from: $0) }
            }
        } else if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(port).bigEndian)
            family = AF_INET6
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeMutableBytes(of: &storage) { raw in
                withUnsafeBytes(of: v6) { raw.copyMemory(from: $0) }
            }
        } else {
            throw SocketError("'\(host)' is not an IP address", errno: EINVAL)
        }
    }

    func withSockAddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        withUnsafeBytes(of: storage) { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }

    static func localPort(of fd: Int32) -> Int? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard ok == 0 else { return nil }
        return port(storage)
    }

    /// The IP address of an address returned by `accept` (`::` for a family other than IPv4
    /// and IPv6, which a TCP listener does not accept).
    static func ipAddress(_ storage: sockaddr_storage) -> IPAddress {
        var copy = storage
        return withUnsafePointer(to: &copy) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { IPAddress(socketAddress: $0) }
        } ?? .unspecified
    }

    /// The port of an address returned by `getsockname` (0 for another family).
    static func port(_ storage: sockaddr_storage) -> Int {
        var copy = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &copy) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            }
        case AF_INET6:
            return withUnsafePointer(to: &copy) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
        default:
            return 0
        }
    }
}
