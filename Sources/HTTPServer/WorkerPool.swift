import Dispatch
import Foundation
import Synchronization

/// A fixed set of threads for blocking work (database writes, disk, curl), so event loops
/// never wait on them. Work runs first in, first out.
public final class WorkerPool: Sendable {
    private struct State {
        var queue: [@Sendable () -> Void] = []
        var head = 0
        var stopped = false
    }

    private let state = Mutex(State())
    private let available = DispatchSemaphore(value: 0)
    private let threadCount: Int
    private let finished = DispatchSemaphore(value: 0)

    /// Starts `threads` threads named `name-N`.
    public init(threads: Int, name: String = "worker") {
        precondition(threads > 0)
        threadCount = threads
        for index in 0..<threads {
            let thread = Thread { [self] in self.run() }
            thread.name = "\(name)-\(index)"
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// Queues `work`. After `shutdown()` work is dropped.
    public func submit(_ work: @escaping @Sendable () -> Void) {
        let accepted = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.queue.append(work)
            return true
        }
        if accepted { available.signal() }
    }

    /// Lets queued work finish, then stops the threads and waits for them.
    public func shutdown() {
        let alreadyStopped = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return state.stopped
        }
        guard !alreadyStopped else { return }
        for _ in 0..<threadCount { available.signal() }
        for _ in 0..<threadCount { finished.wait() }
    }

    private func run() {
        while true {
            available.wait()
            let work = state.withLock { state -> (@Sendable () -> Void)? in
                guard state.head < state.queue.count else { return nil }
                let work = state.queue[state.head]
                state.head += 1
                if state.head > 1024, state.head * 2 > state.queue.count {
                    state.queue.removeFirst(state.head)
                    state.head = 0
                }
                return work
            }
            if let work {
                work()
            } else {
                // Woken with nothing queued: only shutdown does that.
                finished.signal()
                return
            }
        }
    }
}
