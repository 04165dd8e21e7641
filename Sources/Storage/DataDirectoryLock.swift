import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An `flock(2)` on `<data-dir>/bluelibrary.lock`: a server on the SQLite data directory
/// holds it shared for as long as it runs, `bluelibrary restore` holds it exclusive while it
/// replaces the database. Neither waits: each refuses at once while the other holds it. The
/// kernel drops the lock when its process dies, so a killed server leaves nothing to clean.
/// (SQLite's own locks are `fcntl` locks on the database file; this one is separate.)
public final class DataDirectoryLock: Sendable {
    public enum Mode: Sendable {
        /// A server: several may hold it at once.
        case shared
        /// A restore: nobody else may hold it.
        case exclusive
    }

    /// The lock file's name inside the data directory.
    public static let fileName = "bluelibrary.lock"

    public let path: String
    private let descriptor: Int32

    /// Takes the lock, or throws ``Held`` when another process holds it in a conflicting mode.
    public init(directory: String, mode: Mode) throws {
        path = URL(fileURLWithPath: directory).appendingPathComponent(Self.fileName).path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(path: path, reason: String(cString: strerror(errno))) }
        guard flock(fd, (mode == .shared ? LOCK_SH : LOCK_EX) | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK { throw Held(path: path, mode: mode) }
            throw Failure(path: path, reason: String(cString: strerror(code)))
        }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// Another process holds the lock in a mode that conflicts with `mode`.
    public struct Held: Error, CustomStringConvertible, Sendable {
        public let path: String
        /// The mode that was asked for.
        public let mode: Mode
        public var description: String {
            switch mode {
            case .shared: "a restore is replacing the database in this data directory (it holds \(path)); start the server once it has finished"
            case .exclusive: "a server is running on this data directory (it holds \(path)); stop it first"
            }
        }
    }

    /// The lock file could not be opened or locked.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let path: String
        public let reason: String
        public var description: String { "cannot lock \(path): \(reason)" }
    }
}
