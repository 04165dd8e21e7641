import Dispatch
import Essentials
import Synchronization

/// Hands out indexes of free reader connections, one holder per index at a time.
///
/// A counting `DispatchSemaphore` holds the number of free slots (so waiting is bounded by a
/// timeout and needs no polling); a `Mutex`-protected stack records which indexes are free.
/// After a successful semaphore wait, the stack is guaranteed non-empty.
final class ReaderPool: Sendable {
    private let freeIndexes: Mutex<[Int]>
    /// When each reader was handed out (nil while free): tells a WAL restart whether a long
    /// reader (an export) is in flight, which it could only wait for in vain.
    private let handedOut: Mutex<[ContinuousClock.Instant?]>
    private let freeSlots: DispatchSemaphore
    private let waitCount = Atomic<Int>(0)
    private let timeoutCount = Atomic<Int>(0)

    /// Acquisitions that found no free reader and had to wait (then got one or timed out).
    var waits: Int { waitCount.load(ordering: .relaxed) }
    /// Acquisitions that waited in vain (`acquire` returned nil).
    var timeouts: Int { timeoutCount.load(ordering: .relaxed) }

    /// A turnstile every `acquire` passes; `closeGate` holds it so no new reader gets in.
    private let gate = DispatchSemaphore(value: 1)
    let count: Int

    init(count: Int) {
        self.count = count
        freeIndexes = Mutex(Array(0..<count))
        handedOut = Mutex(Array(repeating: nil, count: count))
        freeSlots = DispatchSemaphore(value: count)
    }

    /// Stops new acquisitions and takes every reader as its in-flight holder releases it,
    /// waiting at most until `deadline`. Returns the indexes taken; the caller must pass them
    /// to `openGate(releasing:)` whether or not all were taken.
    /// Gives up at once, taking nothing, when a reader has been out for `longReader` or more.
    func closeGate(until deadline: DispatchTime, longReader: Duration) -> (indexes: [Int], all: Bool) {
        let now = ContinuousClock.now
        let oldest = handedOut.withLock { $0.compactMap { $0 }.min() }
        if let oldest, now - oldest >= longReader { return ([], false) }
        guard gate.wait(timeout: deadline) == .success else { return ([], false) }
        var taken: [Int] = []
        while taken.count < count {
            guard freeSlots.wait(timeout: deadline) == .success else { return (taken, false) }
            taken.append(freeIndexes.withLock { free in
                guard let index = free.popLast() else {
                    preconditionFailure("ReaderPool: semaphore and free list out of sync")
                }
                return index
            })
        }
        return (taken, true)
    }

    /// Gives back what `closeGate` took and lets readers in again.
    func openGate(releasing indexes: [Int]) {
        for index in indexes { release(index) }
        gate.signal()
    }

    /// A free index, or `nil` if none became free within `timeout`.
    func acquire(timeout: Duration) -> Int? {
        let deadline = DispatchTime.now(plus: timeout)
        // The turnstile: passed at once unless a WAL restart holds it for a moment (or another
        // reader is passing it this instant; not counted as a wait).
        if gate.wait(timeout: .now()) != .success {
            guard gate.wait(timeout: deadline) == .success else {
                timeoutCount.wrappingAdd(1, ordering: .relaxed)
                return nil
            }
        }
        gate.signal()
        if freeSlots.wait(timeout: .now()) != .success {
            waitCount.wrappingAdd(1, ordering: .relaxed)
            guard freeSlots.wait(timeout: deadline) == .success else {
                timeoutCount.wrappingAdd(1, ordering: .relaxed)
                return nil
            }
        }
        let index = freeIndexes.withLock { free in
            guard let index = free.popLast() else {
                preconditionFailure("ReaderPool: semaphore and free list out of sync")
            }
            return index
        }
        let now = ContinuousClock.now
        handedOut.withLock { $0[index] = now }
        return index
    }

    func release(_ index: Int) {
        handedOut.withLock { $0[index] = nil }
        freeIndexes.withLock { $0.append(index) }
        freeSlots.signal()
    }
}
