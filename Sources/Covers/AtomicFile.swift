#if canImport(Glibc)
import Glibc
#endif

/// Whole-file writes that readers see either entirely or not at all: the bytes go to a
/// temporary file in the same directory, are flushed with `fsync`, and the file is renamed
/// over the target (`rename(2)` is atomic within a file system). A crash leaves at most a
/// `.tmp-` file, which the cache deletes when it starts.
enum AtomicFile {
    struct WriteError: Error, CustomStringConvertible {
        let operation: String
        let code: Int32
        var description: String { "\(operation) failed: \(String(cString: strerror(code)))" }
    }

    static let temporaryPrefix = ".tmp-"

    static func write(_ bytes: [UInt8], to path: String, directory: String) throws(WriteError) {
        var suffix = UInt64.random(in: 0...UInt64.max)
        let temporary = directory + "/" + temporaryPrefix + SHA256.hex(withUnsafeBytes(of: &suffix) { Array($0) })
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw WriteError(operation: "open", code: errno) }
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
