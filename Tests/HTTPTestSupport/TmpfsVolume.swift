#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A tmpfs of a few MB mounted on a fresh directory, unmounted when released: a volume the
/// disk-full tests can fill (they run as root; `canMount` is false where mounting is refused).
public final class TmpfsVolume {
    public let path: String

    public static let canMount: Bool = (try? TmpfsVolume(bytes: 1 << 20)) != nil

    public init(bytes: Int) throws {
        path = NSTemporaryDirectory() + "bluelibrary-tmpfs-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        guard mount("tmpfs", path, "tmpfs", 0, "size=\(bytes)") == 0 else {
            try? FileManager.default.removeItem(atPath: path)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EPERM)
        }
    }

    /// The size of the file `name` in the volume, or -1 when there is none.
    public func size(of name: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path + "/" + name))?[.size] as? Int) ?? -1
    }

    /// Writes a file that leaves about `leaving` bytes free; returns its path.
    public func fill(leaving: Int) throws -> String {
        var stats = statvfs()
        guard statvfs(path, &stats) == 0 else { throw POSIXError(.EIO) }
        let free = Int(stats.f_bavail) * Int(stats.f_frsize)
        let filler = path + "/filler"
        let fd = open(filler, O_WRONLY | O_CREAT, 0o600)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        defer { close(fd) }
        guard free > leaving, posix_fallocate(fd, 0, off_t(free - leaving)) == 0 else { throw POSIXError(.ENOSPC) }
        return filler
    }

    deinit {
        umount2(path, Int32(MNT_DETACH))
        try? FileManager.default.removeItem(atPath: path)
    }
}
