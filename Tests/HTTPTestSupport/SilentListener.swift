#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// A TCP listener on loopback that accepts every connection and never says a word: a server that
/// stopped answering (a stalled database, a network partition) as a client sees it. It counts
/// the connections it accepted and those their client then closed (it reads until the end).
public final class SilentListener: Sendable {
    public let port: Int
    private let listener: Int32
    /// Under its lock: the counts, the connections still open, and whether `close()` ran (a
    /// connection is shut down and closed under the lock, so no number is used once reused).
    private let counts = Mutex((accepted: 0, closedByClient: 0, open: [Int32](), closed: false))

    public init() throws {
        (listener, port) = try loopbackListener()
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Connections accepted so far.
    public var accepted: Int { counts.withLock { $0.accepted } }
    /// Accepted connections their client has closed.
    public var closedByClient: Int { counts.withLock { $0.closedByClient } }

    /// Stops listening and shuts the connections still open (their threads then close them).
    /// The accepting thread holds the listener until then.
    public func close() {
        counts.withLock { counts in
            guard !counts.closed else { return }
            counts.closed = true
            shutdown(listener, Int32(SHUT_RDWR))
            for fd in counts.open { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    deinit { Glibc.close(listener) }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                return
            }
            let kept = counts.withLock { counts in
                guard !counts.closed else { return false }
                counts.accepted += 1
                counts.open.append(fd)
                return true
            }
            guard kept else {
                Glibc.close(fd)
                return
            }
            Thread.detachNewThread { [self] in drain(fd) }
        }
    }

    /// Reads (and ignores) what the client sends until it closes.
    private func drain(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
        counts.withLock {
            $0.closedByClient += 1
            $0.open.removeAll { $0 == fd }
            Glibc.close(fd)
        }
    }
}

/// A TCP socket listening on 127.0.0.1 at a free port: its descriptor and the port.
/// - Throws: `RawHTTPClient.ClientError` with the errno when it cannot listen.
public func loopbackListener(backlog: Int32 = 64) throws -> (descriptor: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw RawHTTPClient.ClientError(description: "no socket: errno \(errno)") }
    var one: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0, Glibc.listen(fd, backlog) == 0 else {
        let failure = errno
        Glibc.close(fd)
        throw RawHTTPClient.ClientError(description: "cannot listen on 127.0.0.1: errno \(failure)")
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}
