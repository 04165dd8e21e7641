#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The cross-process fetch locks of one cache directory: a fixed set of ``stripeCount`` lock
/// files `<cache>/.locks/<n>.lock` (n from the URL hash), created when first used and never
/// deleted, so they never pile up however many URLs are fetched (or fail).
///
/// A fetch holds its cover's stripe (`flock(LOCK_EX)`) from before the cache is looked at again
/// until the fetched copy is stored. A second process (or service) missing the same cover waits
/// for the stripe, then finds the copy the first stored and fetches nothing.
///
/// - Waiting is bounded: the lock is polled (`LOCK_NB`, a short sleep between tries) up to a
///   timeout (the fetch timeout); past it the fetch runs unlocked (at worst a cover is fetched
///   twice), so a stuck holder never blocks fetches.
/// - Within one service, fetches of different covers in one stripe share the stripe's lock
///   (the first takes the `flock`, the others join it; the last releases it), so striping never
///   serialises this service's own fetches. Two services (or processes) exclude each other:
///   `flock` locks belong to open files.
/// - Why lock files and not a database advisory lock: the cache directory is what the instances
///   share (not necessarily one database), and the kernel drops an `flock` when its holder
///   dies, so a killed process never leaves a cover locked.
final class CoverFetchLocks: Sendable {
    static let stripeCount = 64
    /// The lock files' directory inside the cache directory (never scanned or evicted).
    static let directoryName = ".locks"
    /// Microseconds between two tries while another process holds a stripe.
    static let pollMicroseconds: useconds_t = 10_000

    private struct Held {
        let descriptor: Int32
        var holders: Int
    }

    let directory: String
    private let held = Mutex<[Int: Held]>([:])

    /// Lock files in `cacheDirectory/.locks` (created if missing; when it cannot be, every
    /// `lock` returns nil and fetches run unlocked).
    init(cacheDirectory: String) {
        directory = cacheDirectory + "/" + Self.directoryName
        _ = mkdir(directory, 0o755)
    }

    /// The stripe of the cover whose URL hash (64 hex digits) is `urlHash`.
    static func stripe(ofURLHash urlHash: some StringProtocol) -> Int {
        var value = 0
        for byte in urlHash.utf8.prefix(4) {
            let digit: Int
            switch byte {
            case 0x30...0x39: digit = Int(byte - 0x30)
            case 0x61...0x66: digit = Int(byte - 0x61 + 10)
            default: digit = 0
            }
            value = value << 4 | digit
        }
        return value % stripeCount
    }

    func path(ofStripe stripe: Int) -> String { directory + "/\(stripe).lock" }

    /// Takes `stripe`, waiting at most `timeout`; nil when it was not free in time or its file
    /// cannot be opened (a read-only directory): the caller then fetches unlocked.
    func lock(stripe: Int, timeout: Duration) -> CoverFetchLock? {
        let descriptor = open(path(ofStripe: stripe), O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return nil }
        enum Attempt { case joined, acquired, busy, failed }
        let deadline = ContinuousClock.now + timeout
        while true {
            let attempt = held.withLock { held -> Attempt in
                if var entry = held[stripe] {
                    entry.holders += 1
                    held[stripe] = entry
                    return .joined
                }
                if flock(descriptor, LOCK_EX | LOCK_NB) == 0 {
                    held[stripe] = Held(descriptor: descriptor, holders: 1)
                    return .acquired
                }
                return errno == EWOULDBLOCK || errno == EINTR ? .busy : .failed
            }
            switch attempt {
            case .acquired:
                return CoverFetchLock(locks: self, stripe: stripe)
            case .joined:
                close(descriptor)
                return CoverFetchLock(locks: self, stripe: stripe)
            case .failed:
                close(descriptor)
                return nil
            case .busy:
                guard ContinuousClock.now < deadline else {
                    close(descriptor)
                    return nil
                }
                usleep(Self.pollMicroseconds)
            }
        }
    }

    fileprivate func release(stripe: Int) {
        let descriptor = held.withLock { held -> Int32? in
            guard var entry = held[stripe] else { return nil }
            entry.holders -= 1
            if entry.holders > 0 {
                held[stripe] = entry
                return nil
            }
            held[stripe] = nil
            return entry.descriptor
        }
        if let descriptor { close(descriptor) }  // closing releases the flock
    }

    /// Whether anyone (another process, or another service) holds `stripe` now.
    func isLocked(stripe: Int) -> Bool { CoverDiskCache.isLocked(path(ofStripe: stripe)) }
}

/// A held stripe of ``CoverFetchLocks``; released when the last reference goes.
final class CoverFetchLock: Sendable {
    private let locks: CoverFetchLocks
    private let stripe: Int

    fileprivate init(locks: CoverFetchLocks, stripe: Int) {
        self.locks = locks
        self.stripe = stripe
    }

    deinit {
        locks.release(stripe: stripe)
    }
}
