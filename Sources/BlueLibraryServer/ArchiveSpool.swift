#if canImport(Glibc)
import Glibc
#endif
import HTTPServer

/// An uploaded archive on disk: `PUT /archive` writes the body here as it arrives (bounded
/// memory, and the database's one writer is not held while a client uploads at its own pace),
/// then the import reads it through a read-only mapping whose pages are released behind the
/// parser, so the import's resident memory does not grow with the archive.
///
/// The file is unlinked as soon as it is created: nothing is left behind, whatever happens.
final class ArchiveSpool {
    private let fd: Int32
    private(set) var count = 0

    /// Creates the (already unlinked) file in `directory`.
    init(directory: String) throws {
        var template = Array((directory + "/.archive-upload-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw Self.failure("cannot create a file for the upload in \(directory)", errno) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Appends `bytes`.
    func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw Self.failure("cannot store the upload", errno)
                }
                offset += n
            }
        }
        count += bytes.count
    }

    /// Runs `body` with the whole file mapped read-only, and a function that releases the
    /// mapping's pages before a byte offset (they are read from the file again if touched).
    func withMappedBytes<T, E: Error>(
        _ body: (UnsafeBufferPointer<UInt8>, _ release: (Int) -> Void) throws(E) -> T
    ) throws -> T {
        guard count > 0 else { return try body(UnsafeBufferPointer(start: nil, count: 0), { _ in }) }
        guard let base = mmap(nil, count, PROT_READ, MAP_PRIVATE, fd, 0), base != MAP_FAILED else {
            throw Self.failure("cannot map the upload", errno)
        }
        defer { munmap(base, count) }
        _ = madvise(base, count, MADV_SEQUENTIAL)
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        var released = 0
        let release = { (offset: Int) in
            // Whole pages only, and not for every batch: madvise is a system call.
            let end = min(offset, self.count) / page * page
            guard end - released >= 8 << 20 else { return }
            _ = madvise(base + released, end - released, MADV_DONTNEED)
            released = end
        }
        let bytes = UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: count)
        return try body(bytes, release)
    }

    private static func failure(_ what: String, _ code: Int32) -> HTTPError {
        HTTPError(.serviceUnavailable, detail: "The server \(what): \(String(cString: strerror(code))).", headers: ["Retry-After": "5"])
    }
}
