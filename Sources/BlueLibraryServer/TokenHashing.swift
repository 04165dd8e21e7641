import Dispatch
import Essentials
import Synchronization

/// The slow token checks (PBKDF2, ~210,000 iterations) on a few threads of their own, with a
/// bounded number admitted at once: a flood of wrong tokens queues here, not in the shared
/// worker pool that serves writes, and beyond `capacity` checks are refused at once (503)
/// instead of waiting.
public final class TokenHashing: Sendable {
    private let pool: BoundedThreadPool
    private let admitted = Atomic<Int>(0)
    /// Checks running or queued at most.
    public let capacity: Int

    public init(threads: Int = 2, capacity: Int = 8) {
        self.capacity = max(threads, capacity)
        // Admission below keeps queued + running within `capacity`, so the pool's own queue
        // limit is never what refuses.
        pool = BoundedThreadPool(threads: threads, queueLimit: self.capacity, name: "token-hash", stackSize: 1 << 20)
    }

    /// Runs `work` on the pool and waits for it; nil (nothing run) when `capacity` checks are
    /// already admitted.
    func run(_ work: @escaping @Sendable () -> Bool) -> Bool? {
        guard admitted.wrappingAdd(1, ordering: .acquiring).newValue <= capacity else {
            admitted.subtract(1, ordering: .relaxed)
            return nil
        }
        let result = Mutex<Bool?>(nil)
        let done = DispatchSemaphore(value: 0)
        let queued = pool.submit {
            let outcome = work()
            result.withLock { $0 = outcome }
            done.signal()
        }
        if queued { done.wait() }
        admitted.subtract(1, ordering: .releasing)
        return result.withLock { $0 } ?? false
    }

    public func shutdown() { pool.shutdown() }
}
