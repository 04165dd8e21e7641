#if canImport(Glibc)
import Glibc
#endif

/// Whole-file writes that readers see either entirely or not at all: the bytes go to a
/// temporary file in the same directory (`mkstemp(3)`: a fresh unique name, created
/// exclusively, mode 0600: only the service reads its cache), are flushed with `fsync`, and the file is renamed
/// over the target (`rename(2)` is atomic within a file system). A crash leaves at most a
/// `.tmp-` file, which the cache deletes when it starts. The temporary file is `flock`ed while
/// it is written (closing it releases the lock, as a crash does), so a cache opening the same
/// directory in another process leaves a write in progress alone.
enum AtomicFile {
    struct WriteError: Error, CustomStringConvertible {
        let operation: String
        let code: Int32
        var description: String { "\(operation) failed: \(String(cString: strerror(code)))" }
    }

    static let temporaryPrefix = ".tmp-"

    static func write(_ bytes: [UInt8], to path: String, directory: String) throws(WriteError) {
        var template = Array((directory + "/" + temporaryPrefix + "XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw WriteError(operation: "mkstemp", code: errno) }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        _ = flock(descriptor, LOCK_EX)  // a new file nobody else has opened: never waits
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var failure: WriteError?
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = WriteError(operation: "write", code: errno)
                    return
                }
                offset += written
            }
        }
        if failure == nil, fsync(descriptor) != 0 { failure = WriteError(operation: "fsync", code: errno) }
        if close(descriptor) != 0, failure == nil { failure = WriteError(operation: "close", code: errno) }
        if failure == nil, rename(temporary, path) != 0 { failure = WriteError(operation: "rename", code: errno) }
        if let failure {
            unlink(temporary)
            throw failure
        }
    }
}
