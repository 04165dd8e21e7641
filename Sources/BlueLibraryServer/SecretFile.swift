#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A secret read from a file named by a `*_FILE` variable (`BLUELIBRARY_TOKEN_FILE`,
/// `BLUELIBRARY_DATABASE_PASSWORD_FILE`), the convention of the official postgres image, so a
/// secret can come from Docker or Compose secrets (`/run/secrets/NAME`) and stays out of the
/// process environment that `docker inspect` shows.
///
/// The whole file is the secret, with its trailing newlines (`\n`, `\r\n`) removed, nothing
/// else trimmed: a password may begin or end with a space. An empty file, a directory, a file
/// that cannot be read are start errors that name the file and say what to do; the secret
/// itself is never repeated in a message.
public struct SecretFile: Sendable, Equatable {
    /// The secret, trailing newlines removed.
    public let value: String
    /// Set when others than the file's owner and group may read or write it (mode `o+r` or
    /// `o+w`): the warning to log. The secret is used all the same (a bind-mounted Compose
    /// secret keeps the host file's mode, and the server must be able to read it).
    public let warning: String?

    /// Largest secret file read (a token or a password is short; this is not a key store).
    static let maximumBytes = 64 * 1024

    /// Reads the secret file at `path`, which `variable` named.
    /// - Throws: ``ConfigurationError`` beginning with `variable`.
    public static func read(_ path: String, variable: String) throws(ConfigurationError) -> SecretFile {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            var message = "\(variable): cannot read \(path): \(String(cString: strerror(code)))"
            if code == EACCES {
                message += " (it must be readable by the user the server runs as, uid \(getuid()); "
                    + "for a Compose secret, which keeps the host file's owner and mode: chown \(getuid()) it on the host and chmod 0400)"
            } else if code == ENOENT {
                message += " (the variable names a file holding the secret, not the secret itself)"
            }
            throw ConfigurationError(message)
        }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            throw ConfigurationError("\(variable): cannot read \(path): \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw ConfigurationError("\(variable): \(path) is not a file (a Compose secret whose source file is missing becomes a directory)")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw ConfigurationError("\(variable): cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            bytes += chunk[0..<count]
            guard bytes.count <= maximumBytes else {
                throw ConfigurationError("\(variable): \(path) is larger than \(maximumBytes) bytes; it must hold only the secret")
            }
        }
        while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { bytes.removeLast() }
        guard !bytes.isEmpty else { throw ConfigurationError("\(variable): \(path) is empty; put the secret in it") }
        guard let value = String(validating: bytes, as: UTF8.self) else {
            throw ConfigurationError("\(variable): \(path) is not UTF-8 text")
        }
        let mode = Int(status.st_mode) & 0o777
        let warning = mode & 0o006 == 0 ? nil
            : "\(path) (\(variable)) may be read or written by every user of the machine (mode \(String(mode, radix: 8))); "
                + "make it readable by the server's user only: chmod 0400, owned by that user (uid 10001 in the container image)"
        return SecretFile(value: value, warning: warning)
    }
}
