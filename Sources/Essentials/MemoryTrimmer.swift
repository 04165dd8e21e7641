#if canImport(Glibc)
import CLinux
import Glibc
#endif
import Dispatch
import Synchronization

/// Gives memory the process no longer uses back to the system (glibc's allocator).
///
/// glibc keeps what is freed in its arenas (one per thread that allocated, up to 8 per core)
/// and returns it only from the top of a heap; and after a large block is freed it raises its
/// mmap threshold to that block's size, so the next large blocks of that size come from the
/// arenas too and stay there. A server whose workers once built large answers then keeps that
/// memory resident for good. The policy here:
/// - ``configureAllocator(environment:)`` at start fixes the mmap threshold at 256 KiB (which
///   also stops glibc from raising it, and its trim threshold with it): every block of 256 KiB
///   or more (a large page's bytes, an array of many albums) is its own mapping, unmapped when
///   freed. An operator's own `MALLOC_MMAP_THRESHOLD_` or `MALLOC_TRIM_THRESHOLD_` wins.
/// - ``check()``, run every second by ``start(interval:)``, asks glibc how much it holds free
///   in its arenas (`mallinfo2`: free chunks, not counting mapped blocks) and, above
///   ``threshold`` (16 MiB), calls `malloc_trim(0)`, which returns every free page of every
///   arena. So memory freed after a large response is back within about a second, at the cost
///   of one walk of the free lists a second (and one trim when there is something to trim).
public final class MemoryTrimmer: Sendable {
    /// The trimmer the server runs.
    public static let shared = MemoryTrimmer()

    /// Free bytes held in the arenas above which a check trims.
    public let threshold: Int
    private let counters = Mutex((trims: 0, released: 0))

    public init(threshold: Int = 16 << 20) {
        self.threshold = threshold
    }

    /// The block size from which glibc maps blocks of their own (see the type's rules).
    public static let mmapThreshold: Int32 = 256 << 10

    /// Applies the allocator settings of the type's rules, unless the environment sets glibc's
    /// own variables for them. Returns whether they were applied.
    @discardableResult
    public static func configureAllocator(environment: [String: String]) -> Bool {
        #if canImport(Glibc)
        guard environment["MALLOC_MMAP_THRESHOLD_"] == nil, environment["MALLOC_TRIM_THRESHOLD_"] == nil else { return false }
        return mallopt(M_MMAP_THRESHOLD, mmapThreshold) == 1
        #else
        return false
        #endif
    }

    /// Bytes the allocator holds free in its arenas (mapped blocks are never held free).
    public static func freeBytesHeld() -> Int {
        #if canImport(Glibc)
        return Int(mallinfo2().fordblks)
        #else
        return 0
        #endif
    }

    /// Trims when the allocator holds more than ``threshold`` free; returns the bytes that the
    /// trim took off the free lists' resident total (0 when it did not trim).
    @discardableResult
    public func check() -> Int {
        let free = Self.freeBytesHeld()
        guard free > threshold else { return 0 }
        #if canImport(Glibc)
        malloc_trim(0)
        #endif
        // What stays counted as free after a trim is address space without pages (glibc keeps
        // the chunks, the kernel drops their pages): report the bytes the trim considered.
        counters.withLock {
            $0.trims += 1
            $0.released += free
        }
        return free
    }

    /// Trims done, and the free bytes they returned (as `check` counts them).
    public var statistics: (trims: Int, releasedBytes: Int) { counters.withLock { ($0.trims, $0.released) } }

    /// Runs ``check()`` every `interval` on a utility queue until ``stop()``.
    public func start(interval: Duration = .seconds(1)) {
        let generation = running.add(1, ordering: .relaxed).newValue
        let nanoseconds = Int(interval.components.seconds) * 1_000_000_000 + Int(interval.components.attoseconds / 1_000_000_000)
        schedule(generation: generation, every: .nanoseconds(max(1_000_000, nanoseconds)))
    }

    /// Ends the checks ``start(interval:)`` began.
    public func stop() {
        running.add(1, ordering: .relaxed)
    }

    /// Each start or stop counts one up; a scheduled check runs only for its own start.
    private let running = Atomic<Int>(0)
    private static let queue = DispatchQueue(label: "memory-trimmer", qos: .utility)

    private func schedule(generation: Int, every interval: DispatchTimeInterval) {
        Self.queue.asyncAfter(deadline: .now() + interval) { [self] in
            guard running.load(ordering: .relaxed) == generation else { return }
            check()
            schedule(generation: generation, every: interval)
        }
    }
}
