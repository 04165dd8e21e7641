#if canImport(Glibc)
import CLinux
import Glibc
#endif

/// Bytes and file regions waiting to be written to one socket, in order.
struct OutputQueue {
    enum Chunk {
        /// `owned`: the buffer was made by this queue (``append(recycling:_:)``), so nothing
        /// else holds it and it may be recycled once sent. Bytes handed in (a stream payload
        /// shared by many connections) are never recycled.
        case bytes([UInt8], offset: Int, owned: Bool = false)
        case file(fd: Int32, offset: Int, remaining: Int)
    }

    /// The largest buffer kept for reuse after it was sent (a page and its head fit).
    static let recycledCapacityLimit = 128 * 1024

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
        if !lastIsShared, case .bytes(var last, let offset, let owned)? = chunks.last, last.count + bytes.count <= 64 * 1024 {
            chunks[chunks.count - 1] = .bytes([], offset: 0)
            last.append(contentsOf: bytes)
            chunks[chunks.count - 1] = .bytes(last, offset: offset, owned: owned)
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

    /// Appends bytes that `encode` writes into a buffer: the previous chunk when it has room,
    /// else `recycled` (the event loop's spare buffer, taken over by the queue; see
    /// ``flush(to:recycling:)``), so that encoding a response allocates nothing. Returns what
    /// `encode` returns.
    mutating func append<R>(recycling recycled: inout [UInt8], _ encode: (inout [UInt8]) -> R) -> R {
        var buffer: [UInt8]
        var offset = 0
        let joins: Bool
        var owned = true
        // The buffer's whole size bounds the join, not what is left to send of it: a pipelining
        // client reading as fast as it sends would otherwise keep one buffer growing for ever
        // (its sent prefix is never trimmed), and a large shared body would be copied to carry
        // a head behind it.
        if !lastIsShared, case .bytes(let last, let lastOffset, let lastOwned)? = chunks.last, last.count <= 16 * 1024 {
            // Behind what is still queued (pipelined responses): one send for all of them.
            chunks[chunks.count - 1] = .bytes([], offset: 0)
            buffer = last
            offset = lastOffset
            owned = lastOwned
            joins = true
        } else {
            buffer = recycled
            recycled = []
            buffer.removeAll(keepingCapacity: true)
            joins = false
        }
        let before = buffer.count
        let result = encode(&buffer)
        queuedBytes += buffer.count - before
        if joins {
            chunks[chunks.count - 1] = .bytes(buffer, offset: offset, owned: owned)
        } else if !buffer.isEmpty {
            chunks.append(.bytes(buffer, offset: 0, owned: true))
            lastIsShared = false
        } else {
            recycled = buffer
        }
        return result
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
        var discarded: [UInt8] = []
        return flush(to: socket, recycling: &discarded)
    }

    /// ``flush(to:)``, handing a sent buffer the queue made back to `recycled` (when that is
    /// empty and the buffer is not larger than ``recycledCapacityLimit``) for the next response.
    mutating func flush(to socket: Int32, recycling recycled: inout [UInt8]) -> (FlushResult, Int) {
        var written = 0
        while let first = chunks.first {
            switch first {
            case let .bytes(bytes, offset, owned):
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
                    if owned && recycled.capacity == 0 && bytes.capacity <= Self.recycledCapacityLimit { recycled = bytes }
                } else {
                    chunks[0] = .bytes(bytes, offset: offset + n, owned: owned)
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
