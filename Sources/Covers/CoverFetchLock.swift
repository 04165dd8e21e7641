#if canImport(Glibc)
import Glibc
#endif

/// An exclusive lock on one cover's fetch across processes that share a cache directory:
/// `flock(LOCK_EX)` on `<url hash>.lock` in the directory, held from before the cache is
/// looked at again until the fetched copy is stored. A second process (or instance) missing the
/// same cover waits for the lock, then finds the copy the first stored and fetches nothing.
///
/// Why a lock file and not a database advisory lock: the cache directory is what the instances
/// share (not necessarily one database), and the kernel drops an `flock` when its holder dies,
/// so a killed process never leaves a cover locked. Lock files are empty and stay (deleting
/// one while another process waits on it would let a third lock a new file); the cache removes
/// a cover's lock file with its copy, which at worst lets one fetch run twice.
///
/// Locks are per open file description, so two services in one process exclude each other too.
final class CoverFetchLock {
    private let descriptor: Int32

    /// Waits for the lock on `path` (creating the file); nil when the file cannot be opened or
    /// locked (a read-only or vanished directory): the fetch then runs unlocked, as before.
    init?(path: String) {
        let descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return nil }
        var result: Int32
        repeat {
            result = flock(descriptor, LOCK_EX)
        } while result != 0 && errno == EINTR
        guard result == 0 else {
            close(descriptor)
            return nil
        }
        self.descriptor = descriptor
    }

    /// Releases the lock (closing the file releases it).
    deinit {
        close(descriptor)
    }
}
