import Dispatch
import Essentials
import Foundation
import Synchronization
import TestThreads
import Testing

@Suite(.ownThreads) struct BoundedThreadPoolTests {
    /// The kernel's name of a pool thread (what `top -H` shows) is the pool's name and index, cut
    /// to the kernel's 15 bytes; Foundation's `Thread.name` alone left it the process's name.
    @Test func poolThreadsCarryTheirNameInTheKernel() {
        let pool = BoundedThreadPool(threads: 1, name: "named-pool-thread")
        let seen = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        #expect(pool.submit {
            let comm = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
            seen.withLock { $0 = comm?.trimmingCharacters(in: .newlines) }
            done.signal()
        })
        #expect(done.wait(timeout: .now() + 30) == .success)
        pool.shutdown(.finishQueued)
        #expect(seen.withLock { $0 } == "named-pool-thre")
    }

    /// One thread, held by a job that waits for a gate: the queue fills and then refuses.
    @Test func refusesWhenTheQueueIsFull() {
        let pool = BoundedThreadPool(threads: 1, queueLimit: 2, name: "test-pool")
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let ran = Mutex<[Int]>([])
        #expect(pool.submit { started.signal(); gate.wait(); ran.withLock { $0.append(0) } })
        #expect(started.wait(timeout: .now() + 30) == .success)
        #expect(pool.submit { ran.withLock { $0.append(1) } })
        #expect(pool.submit { ran.withLock { $0.append(2) } })
        #expect(pool.queuedCount == 2)
        #expect(!pool.submit { ran.withLock { $0.append(3) } })
        gate.signal()
        pool.shutdown(.finishQueued)
        #expect(ran.withLock { $0 } == [0, 1, 2])
        #expect(!pool.submit {}, "no work is taken after shutdown")
    }

    @Test func cancelQueuedRunsEachQueuedItemsCancelInstead() {
        let pool = BoundedThreadPool(threads: 1, queueLimit: 10, name: "test-pool")
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let log = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        pool.submit({ started.signal(); gate.wait(); log.withLock { $0.append("ran 0") }; done.signal() }, cancel: { log.withLock { $0.append("cancelled 0") } })
        #expect(started.wait(timeout: .now() + 30) == .success)
        for index in 1...3 {
            pool.submit({ log.withLock { $0.append("ran \(index)") } }, cancel: { log.withLock { $0.append("cancelled \(index)") } })
        }
        pool.shutdown(.cancelQueued)
        #expect(log.withLock { $0 } == ["cancelled 1", "cancelled 2", "cancelled 3"])
        let finished = DispatchSemaphore(value: 0)
        #expect(!pool.submit { finished.signal() })
        gate.signal()
        // The running job still finishes on its thread.
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(log.withLock { $0.last } == "ran 0")
    }

    @Test func runsWorkOnEveryThread() {
        let pool = BoundedThreadPool(threads: 3, name: "test-pool")
        let count = Atomic<Int>(0)
        for _ in 0..<500 { pool.submit { count.add(1, ordering: .relaxed) } }
        pool.shutdown()
        #expect(count.load(ordering: .relaxed) == 500)
    }

    /// An item is let go once it has run: what its closure holds (a request and its body, a
    /// route's captures) is freed then, not kept in the queue until it is next compacted.
    @Test func whatAnItemHoldsIsFreedOnceItHasRun() {
        final class Held: Sendable {}
        let pool = BoundedThreadPool(threads: 1, name: "test-pool")
        defer { pool.shutdown() }
        weak var held: Held?
        do {
            let object = Held()
            held = object
            let ran = DispatchSemaphore(value: 0)
            #expect(pool.submit { withExtendedLifetime(object) {}; ran.signal() })
            #expect(ran.wait(timeout: .now() + 30) == .success)
        }
        // The one thread is done with the first item when it takes this one.
        let barrier = DispatchSemaphore(value: 0)
        #expect(pool.submit { barrier.signal() })
        #expect(barrier.wait(timeout: .now() + 30) == .success)
        #expect(held == nil, "the item that ran is no longer held")
    }
}
