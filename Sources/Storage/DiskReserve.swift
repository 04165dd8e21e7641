import Glibc
import SQLite
import Synchronization

/// Space kept aside next to the database so that a full disk can be recovered from.
///
/// When a commit fails because the disk is full, the WAL that filled it can only be copied
/// into the database file if that file can grow, and only then can the WAL be truncated. So a
/// file of `size` bytes is allocated at start; the first write that finds the disk full deletes
/// it, and the store checkpoints and truncates the WAL into the space it freed. Writes are
/// refused while the disk stays full (the server answers 507), reads go on, and the first write
/// that succeeds again clears the state; the reserve is allocated again as soon as the volume
/// has twice its size free.
final class DiskReserve: Sendable {
    let path: String
    /// The configured size; a small volume gets at most 1/16 of its capacity.
    let size: Int
    private let full = Atomic<Bool>(false)
    private let present = Atomic<Bool>(false)

    init(path: String, size: Int) {
        self.path = path
        self.size = size
        if access(path, F_OK) == 0 {
            present.store(true, ordering: .relaxed)
        } else {
            _ = allocateIfRoom()
        }
    }

    /// True from a write that found the disk full until a write succeeds again.
    var isFull: Bool { full.load(ordering: .relaxed) }

    /// True while the reserve file is allocated.
    var isPresent: Bool { present.load(ordering: .relaxed) }

    /// A write found the disk full: gives the reserve back to the file system. Returns true
    /// when this call changed the state (the caller then checkpoints).
    func diskBecameFull() -> Bool {
        let changed = !full.exchange(true, ordering: .acquiringAndReleasing)
        if present.exchange(false, ordering: .acquiringAndReleasing) {
            unlink(path)
        }
        return changed
    }

    /// A write succeeded: the disk is no longer full; re-allocates the reserve when there is
    /// room for it.
    func writeSucceeded() {
        if full.load(ordering: .relaxed) {
            full.store(false, ordering: .relaxed)
        }
        if !present.load(ordering: .relaxed) {
            _ = allocateIfRoom()
        }
    }

    /// Allocates the reserve if the volume has at least twice its size free.
    private func allocateIfRoom() -> Bool {
        guard size > 0 else { return false }
        var stats = statvfs()
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        guard statvfs(directory.isEmpty ? "/" : directory, &stats) == 0 else { return false }
        let blockSize = UInt64(stats.f_frsize)
        let (free, freeOverflow) = UInt64(stats.f_bavail).multipliedReportingOverflow(by: blockSize)
        let (total, totalOverflow) = UInt64(stats.f_blocks).multipliedReportingOverflow(by: blockSize)
        let bytes = min(UInt64(size), totalOverflow ? UInt64(size) : total / 16)
        guard !freeOverflow, bytes > 0, free >= bytes * 2 else { return false }
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard posix_fallocate(fd, 0, off_t(bytes)) == 0 else {
            unlink(path)
            return false
        }
        present.store(true, ordering: .relaxed)
        return true
    }
}
