import Dispatch
import Synchronization

/// Hands out indexes of free reader connections, one holder per index at a time.
///
/// A counting `DispatchSemaphore` holds the number of free slots (so waiting is bounded by a
/// timeout and needs no polling); a `Mutex`-protected stack records which indexes are free.
/// After a successful semaphore wait, the stack is guaranteed non-empty.
final class ReaderPool: Sendable {
    private let freeIndexes: Mutex<[Int]>
    private let freeSlots: DispatchSemaphore
    private let waitCount = Atomic<Int>(0)
    private let timeoutCount = Atomic<Int>(0)

    /// Acquisitions that found no free reader and had to wait (then got one or timed out).
    var waits: Int { waitCount.load(ordering: .relaxed) }
    /// Acquisitions that waited in vain (`acquire` returned nil).
    var timeouts: Int { timeoutCount.load(ordering: .relaxed) }

    init(count: Int) {
        freeIndexes = Mutex(Array(0..<count))
        freeSlots = DispatchSemaphore(value: count)
    }

    /// A free index, or `nil` if none became free within `timeout`.
    func acquire(timeout: Duration) -> Int? {
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let deadline: DispatchTime = nanoseconds.overflow
            ? .distantFuture
            : .now() + .nanoseconds(Int(clamping: max(0, nanoseconds.partialValue + attoseconds / 1_000_000_000)))
        if freeSlots.wait(timeout: .now()) != .success {
            waitCount.wrappingAdd(1, ordering: .relaxed)
            guard freeSlots.wait(timeout: deadline) == .success else {
                timeoutCount.wrappingAdd(1, ordering: .relaxed)
                return nil
            }
        }
        return freeIndexes.withLock { free in
            guard let index = free.popLast() else {
                preconditionFailure("ReaderPool: semaphore and free list out of sync")
            }
            return index
        }
    }

    func release(_ index: Int) {
        freeIndexes.withLock { $0.append(index) }
        freeSlots.signal()
    }
}
