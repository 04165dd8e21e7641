#if canImport(Glibc)
import CLinux
import Glibc
#endif

/// Bytes and file regions waiting to be written to one socket, in order.
struct OutputQueue {
    enum Chunk {
        case bytes([UInt8], offset: Int)
        case file(fd: Int32, offset: Int, remaining: Int)
    }

    private(set) var chunks: [Chunk] = []
    private(set) var queuedBytes = 0
    /// The last chunk holds bytes shared with other queues (``appendShared(_:)``): nothing is
    /// joined to it, which would copy them.
    private var lastIsShared = false

    var isEmpty: Bool { chunks.isEmpty }

    mutating func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        queuedBytes += bytes.count
        // Small writes join the previous chunk so a response leaves in one syscall.
        if !lastIsShared, case .bytes(var last, let offset)? = chunks.last, last.count + bytes.count <= 64 * 1024 {
            chunks[chunks.count - 1] = .bytes([], offset: 0)
            last.append(contentsOf: bytes)
            chunks[chunks.count - 1] = .bytes(last, offset: offset)
        } else {
            chunks.append(.bytes(bytes, offset: 0))
        }
        lastIsShared = false
    }

    /// Queues bytes that other queues hold too (a fan-out's payload) as a chunk of their own,
    /// never joined to a neighbour: each queue keeps a reference to the one storage, not a copy.
    mutating func appendShared(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        queuedBytes += bytes.count
        chunks.append(.bytes(bytes, offset: 0))
        lastIsShared = true
    }

    /// Queues a file region; the queue owns `fd` and closes it once sent or dropped.
    mutating func appendFile(fd: Int32, offset: Int, length: Int) {
        queuedBytes += length
        lastIsShared = false
        chunks.append(.file(fd: fd, offset: offset, remaining: length))
    }

    enum FlushResult {
        case done
        case wouldBlock
        case failed
    }

    /// Writes as much as the socket takes. Returns how it stopped and how many bytes went out.
    mutating func flush(to socket: Int32) -> (FlushResult, Int) {
        var written = 0
        while let first = chunks.first {
            switch first {
            case let .bytes(bytes, offset):
                // MSG_MORE when more follows (a head before a large body or a file): the kernel
                // then fills whole segments instead of sending the head in a packet of its own.
                let flags = Int32(MSG_NOSIGNAL) | (chunks.count > 1 ? Int32(MSG_MORE) : 0)
                let n = bytes.withUnsafeBytes { raw in
                    send(socket, raw.baseAddress! + offset, bytes.count - offset, flags)
                }
                if n < 0 {
                    if errno == EAGAIN || errno == EWOULDBLOCK { return (.wouldBlock, written) }
                    if errno == EINTR { continue }
                    return (.failed, written)
                }
                written += n
                queuedBytes -= n
                if offset + n == bytes.count {
                    chunks.removeFirst()
                } else {
                    chunks[0] = .bytes(bytes, offset: offset + n)
                }
            case let .file(fd, offset, remaining):
                var off = off_t(offset)
                let n = sendfile(socket, fd, &off, min(remaining, 1 << 20))
                if n < 0 {
                    if errno == EAGAIN || errno == EWOULDBLOCK { return (.wouldBlock, written) }
                    if errno == EINTR { continue }
                    return (.failed, written)
                }
                if n == 0 { return (.failed, written) }  // the file shrank under us
                written += n
                queuedBytes -= n
                if n == remaining {
                    close(fd)
                    chunks.removeFirst()
                } else {
                    chunks[0] = .file(fd: fd, offset: offset + n, remaining: remaining - n)
                }
            }
        }
        return (.done, written)
    }

    /// Drops everything, closing any files.
    mutating func discard() {
        for case let .file(fd, _, _) in chunks { close(fd) }
        chunks.removeAll()
        queuedBytes = 0
    }
}
