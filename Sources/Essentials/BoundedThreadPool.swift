import Dispatch
import Foundation
import Synchronization

/// A fixed number of threads that run blocking work (database writes, disk, curl, password
/// hashing) first in, first out, so event loops never wait on it. The one thread pool in the
/// project: the HTTP server's workers, the archive exports, the cover fetches and the token
/// checks each own one.
///
/// - Bound: at most `queueLimit` items wait (running ones are not counted); `submit` beyond
///   that, or after shutdown, refuses at once (returns false) so the caller can answer "busy"
///   instead of queueing without end. The default limit is effectively none.
/// - Shutdown: ``shutdown(_:)`` either lets queued work run and waits for the threads
///   (`.finishQueued`) or hands each queued item to its `cancel` closure at once and lets only
///   the running ones finish on their own (`.cancelQueued`, not waited for).
///
/// ```swift
/// let pool = BoundedThreadPool(threads: 4, queueLimit: 64, name: "cover-fetch")
/// if !pool.submit({ fetch() }, cancel: { answer(.unavailable) }) { answer(.busy) }
/// pool.shutdown(.cancelQueued)
/// ```
public final class BoundedThreadPool: Sendable {
    /// What ``shutdown(_:)`` does with work still queued.
    public enum Shutdown: Sendable {
        /// Queued work runs; `shutdown` returns once every thread has stopped.
        case finishQueued
        /// Queued work is cancelled (its `cancel` runs on the caller's thread); `shutdown`
        /// returns at once, running work finishes on its thread.
        case cancelQueued
    }

    private struct Item {
        let run: @Sendable () -> Void
        let cancel: @Sendable () -> Void
    }

    private struct Queue {
        /// The waiting items are those from `head` on. A slot is emptied as its item is taken,
        /// so what a finished item held (a request and its body, a route's captures) is freed
        /// when it has run, not when the queue is next compacted.
        var items: [Item?] = []
        var head = 0
        var stopping = false
        var pending: Int { items.count - head }

        mutating func pop() -> Item? {
            guard head < items.count else { return nil }
            let item = items[head]
            items[head] = nil
            head += 1
            if head == items.count {
                items.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 1024, head * 2 > items.count {
                items.removeFirst(head)
                head = 0
            }
            return item
        }
    }

    /// What the threads share with the owner.
    private final class Shared: Sendable {
        let queue = Mutex(Queue())
        let available = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
    }

    private let shared = Shared()
    /// The number of threads.
    public let threadCount: Int
    /// Items waiting at most (running ones not counted).
    public let queueLimit: Int

    /// Starts `threads` threads named `name-N` (at least one).
    /// - Parameter stackSize: bytes of stack per thread; nil for Foundation's default.
    /// - Parameter onThreadStart: runs first on each thread, before any work (a priority, say).
    public init(threads: Int, queueLimit: Int = .max, name: String, stackSize: Int? = nil,
                onThreadStart: (@Sendable () -> Void)? = nil) {
        threadCount = max(1, threads)
        self.queueLimit = max(1, queueLimit)
        for index in 0..<threadCount {
            startThread(named: "\(name)-\(index)", stackSize: stackSize) { [shared] in
                onThreadStart?()
                Self.work(shared)
            }
        }
    }

    /// Queues `work`; false (and nothing queued) when `queueLimit` items already wait or the
    /// pool is shutting down. `cancel` runs instead of `work` if a `.cancelQueued` shutdown
    /// finds it still queued.
    @discardableResult
    public func submit(_ work: @escaping @Sendable () -> Void, cancel: @escaping @Sendable () -> Void = {}) -> Bool {
        let accepted = shared.queue.withLock { queue -> Bool in
            guard !queue.stopping, queue.pending < queueLimit else { return false }
            queue.items.append(Item(run: work, cancel: cancel))
            return true
        }
        if accepted { shared.available.signal() }
        return accepted
    }

    /// Items waiting for a thread right now.
    public var queuedCount: Int { shared.queue.withLock { $0.pending } }

    /// Stops taking work and stops the threads (see ``Shutdown``). Only the first call acts.
    public func shutdown(_ mode: Shutdown = .finishQueued) {
        let first = shared.queue.withLock { queue -> (first: Bool, cancelled: [Item]) in
            guard !queue.stopping else { return (false, []) }
            queue.stopping = true
            guard mode == .cancelQueued else { return (true, []) }
            defer {
                queue.items = []
                queue.head = 0
            }
            return (true, queue.items[queue.head...].compactMap { $0 })
        }
        guard first.first else { return }
        for item in first.cancelled { item.cancel() }
        for _ in 0..<threadCount { shared.available.signal() }
        if mode == .finishQueued {
            for _ in 0..<threadCount { shared.finished.wait() }
        }
    }

    /// A thread's life: one item per signal; woken with nothing queued only when stopping.
    private static func work(_ shared: Shared) {
        while true {
            shared.available.wait()
            let next = shared.queue.withLock { queue -> (item: Item?, stopping: Bool) in
                (queue.pop(), queue.stopping)
            }
            if let item = next.item {
                item.run()
            } else if next.stopping {
                shared.finished.signal()
                return
            }
        }
    }
}
