import Dispatch
import Foundation
import Synchronization

/// A fixed set of threads owned by the cover service that run blocking fetches; their number
/// is the bound on concurrent upstream fetches. Jobs wait in a FIFO queue of at most
/// `maxQueued` entries.
final class FetchThreads: Sendable {
    struct Job: Sendable {
        let run: @Sendable () -> Void
        /// Called instead of `run` for a job still queued at shutdown.
        let cancel: @Sendable () -> Void
    }

    private struct Queue {
        var jobs: [Job] = []
        var head = 0
        var stopping = false
        var pending: Int { jobs.count - head }

        mutating func pop() -> Job? {
            guard head < jobs.count else { return nil }
            let job = jobs[head]
            head += 1
            if head > 1024, head * 2 > jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            return job
        }
    }

    /// What the threads share with the owner (a `Mutex` cannot be captured by itself).
    private final class Shared: Sendable {
        let queue = Mutex(Queue())
        let available = DispatchSemaphore(value: 0)
    }

    private let shared = Shared()
    private let threadCount: Int
    private let maxQueued: Int

    init(count: Int, maxQueued: Int, name: String) {
        threadCount = max(1, count)
        self.maxQueued = max(1, maxQueued)
        for index in 0..<threadCount {
            let thread = Thread { [shared] in
                while true {
                    shared.available.wait()
                    let next = shared.queue.withLock { queue -> (job: Job?, stop: Bool) in
                        (queue.pop(), queue.stopping)
                    }
                    if let job = next.job {
                        job.run()
                    } else if next.stop {
                        return
                    }
                }
            }
            thread.name = "\(name)-\(index)"
            thread.start()
        }
    }

    /// Queues `job`; false when the queue is full or the threads are stopping.
    func submit(_ job: Job) -> Bool {
        let accepted = shared.queue.withLock { queue -> Bool in
            guard !queue.stopping, queue.pending < maxQueued else { return false }
            queue.jobs.append(job)
            return true
        }
        if accepted { shared.available.signal() }
        return accepted
    }

    /// Stops the threads once their current job is done; queued jobs are cancelled here.
    func shutdown() {
        let cancelled = shared.queue.withLock { queue -> [Job] in
            guard !queue.stopping else { return [] }
            queue.stopping = true
            defer {
                queue.jobs = []
                queue.head = 0
            }
            return Array(queue.jobs[queue.head...])
        }
        for job in cancelled { job.cancel() }
        for _ in 0..<threadCount { shared.available.signal() }
    }
}
