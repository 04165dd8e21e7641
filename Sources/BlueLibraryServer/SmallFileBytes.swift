#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The bytes of small files whose content never changes under their name (the cover cache
/// names each file by its content's hash and replaces by rename): sent from memory, a cached
/// cover costs one `send` instead of an `open`, a `sendfile` and a `close`. Bounded: files of at
/// most ``maxFileBytes``, ``capacityBytes`` in all (outside the cover cache's own limit); past
/// it, files kept leave in no particular order to make room, so a working set larger than the
/// capacity is still served from memory in proportion. A file that cannot be read whole is not
/// kept: the caller sends it from disk, which reports what is wrong.
///
/// Whether the file is still there is the caller's question (the cover cache checks it before
/// it hands out a record); what this returns for a name is always what the file held.
final class SmallFileBytes: Sendable {
    static let maxFileBytes = 64 << 10
    let capacityBytes: Int
    private struct State {
        var files: [String: [UInt8]] = [:]
        var bytes = 0
    }

    private let state = Mutex(State())

    init(capacityBytes: Int = 16 << 20) {
        self.capacityBytes = capacityBytes
    }

    /// The `length` bytes of the file at `path`, from memory or read now; nil when it is
    /// larger than ``maxFileBytes`` or cannot be read whole.
    func bytes(ofFile path: String, length: Int) -> [UInt8]? {
        guard length > 0, length <= Self.maxFileBytes else { return nil }
        if let known = state.withLock({ $0.files[path] }) { return known }
        guard let read = Self.read(path, length: length) else { return nil }
        state.withLock { state in
            guard state.files[path] == nil, length <= capacityBytes else { return }
            while state.bytes + length > capacityBytes, let (evicted, bytes) = state.files.first {
                state.files.removeValue(forKey: evicted)
                state.bytes -= bytes.count
            }
            state.files[path] = read
            state.bytes += length
        }
        return read
    }

    /// Reads the file whole; nil unless it is exactly `length` bytes.
    private static func read(_ path: String, length: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, Int(status.st_size) == length else { return nil }
        var bytes = [UInt8](repeating: 0, count: length)
        var done = 0
        while done < length {
            let count = bytes.withUnsafeMutableBytes { buffer in
                pread(fd, buffer.baseAddress! + done, length - done, off_t(done))
            }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            done += count
        }
        return bytes
    }
}
