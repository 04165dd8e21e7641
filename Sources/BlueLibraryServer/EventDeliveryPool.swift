import Dispatch
import Essentials
import Foundation
import Synchronization

/// Work the ``EventDeliveryPool`` runs: one round of it, after which it says when it wants
/// its next round (nil: none until someone schedules it again).
protocol ScheduledDelivery: AnyObject, Sendable {
    /// Unique for the life of the process (never reused, unlike an object's address).
    var deliverySerial: UInt64 { get }
    func runRound() -> ContinuousClock.Instant?
}

/// The few threads every library's ``EventHub`` shares: a hub holds no thread of its own, it is
/// queued here when it has something to do (frames to fan out, a heartbeat due, a shutdown) and
/// one of the threads runs its round.
///
/// - Bound: at most `threadLimit` threads, started one at a time when work is due and every
///   started thread is busy, kept until ``stop()``. However many libraries are subscribed to,
///   made or deleted, the event delivery costs at most that many threads
///   (`bluelibrary_event_hub_threads`).
/// - Order: a hub's rounds never overlap (a hub scheduled while its round runs is queued again
///   when the round ends), so each stream's payloads stay in order; rounds of different hubs
///   run in parallel on different threads.
/// - Time: rounds are queued by due time (a min-heap); a hub scheduled earlier than it already
///   is moves up, later is ignored.
final class EventDeliveryPool: Sendable {
    let threadLimit: Int
    private let name: String

    private struct Entry {
        let due: ContinuousClock.Instant
        let stamp: UInt64
        let work: any ScheduledDelivery
    }

    private struct State {
        /// Min-heap by `due`; entries whose stamp is no longer `queued`'s are stale, skipped.
        var heap: [Entry] = []
        /// Serial → (due, stamp) of the live entry.
        var queued: [UInt64: (due: ContinuousClock.Instant, stamp: UInt64)] = [:]
        /// Serials whose round runs now → an earlier next round asked for meanwhile.
        var running: [UInt64: ContinuousClock.Instant?] = [:]
        var nextStamp: UInt64 = 0
        var threads = 0
        var idle = 0
        var stopped = false

        mutating func push(_ entry: Entry) {
            heap.append(entry)
            var child = heap.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard heap[child].due < heap[parent].due else { break }
                heap.swapAt(child, parent)
                child = parent
            }
        }

        mutating func popFirst() {
            let last = heap.removeLast()
            guard !heap.isEmpty else { return }
            heap[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1, right = left + 1
                var smallest = parent
                if left < heap.count, heap[left].due < heap[smallest].due { smallest = left }
                if right < heap.count, heap[right].due < heap[smallest].due { smallest = right }
                if smallest == parent { break }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }

        /// The first live entry (stale ones dropped on the way).
        mutating func first() -> Entry? {
            while let top = heap.first {
                if queued[top.work.deliverySerial]?.stamp == top.stamp { return top }
                popFirst()
            }
            return nil
        }

        mutating func enqueue(_ work: any ScheduledDelivery, at due: ContinuousClock.Instant) -> Bool {
            let serial = work.deliverySerial
            if let known = queued[serial], known.due <= due { return false }
            nextStamp += 1
            queued[serial] = (due, nextStamp)
            push(Entry(due: due, stamp: nextStamp, work: work))
            return true
        }
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)

    init(threads: Int, name: String = "sse-events") {
        precondition(threads >= 1, "an event delivery pool needs at least one thread")
        threadLimit = threads
        self.name = name
    }

    /// The pool standalone hubs use (`EventHub(version:)` outside an app, in tests).
    static let standalone = EventDeliveryPool(threads: 2, name: "sse-standalone")

    /// Threads started so far (at most `threadLimit`).
    var threadCount: Int { state.withLock { $0.threads } }

    /// Queued work (hubs with subscribers have a heartbeat queued).
    var queuedCount: Int { state.withLock { $0.queued.count + $0.running.count } }

    /// Asks for a round of `work` at `due` (now or later); an earlier request stands.
    func schedule(_ work: any ScheduledDelivery, at due: ContinuousClock.Instant = .now) {
        let (signal, startThread) = state.withLock { state -> (Bool, Bool) in
            if state.stopped { return (false, false) }
            let serial = work.deliverySerial
            if let asked = state.running[serial] {
                state.running[serial] = min(asked ?? due, due)
                return (false, false)
            }
            guard state.enqueue(work, at: due) else { return (false, false) }
            let start = state.idle == 0 && state.threads < threadLimit
            if start { state.threads += 1 }
            return (state.idle > 0, start)
        }
        if signal { wake.signal() }
        if startThread { start() }
    }

    /// Stops the threads once their current round ends; queued rounds no longer run.
    func stop() {
        let threads = state.withLock { state -> Int in
            state.stopped = true
            return state.threads
        }
        for _ in 0..<threads { wake.signal() }
    }

    private enum Next {
        case run(any ScheduledDelivery)
        case wait(ContinuousClock.Instant?)
        case stop
    }

    private func start() {
        startThread(named: name) { [self] in
            while true {
                let next = state.withLock { state -> Next in
                    if state.stopped { return .stop }
                    guard let top = state.first() else {
                        state.idle += 1
                        return .wait(nil)
                    }
                    guard top.due <= .now else {
                        state.idle += 1
                        return .wait(top.due)
                    }
                    state.popFirst()
                    let serial = top.work.deliverySerial
                    state.queued[serial] = nil
                    state.running[serial] = .some(nil)
                    return .run(top.work)
                }
                switch next {
                case .stop:
                    return
                case let .wait(due):
                    if let due {
                        _ = wake.wait(timeout: .now(plus: max(due - .now, .zero)))
                    } else {
                        wake.wait()
                    }
                    state.withLock { $0.idle -= 1 }
                case let .run(work):
                    let wanted = work.runRound()
                    let signal = state.withLock { state -> Bool in
                        let serial = work.deliverySerial
                        let asked = state.running.removeValue(forKey: serial) ?? nil
                        let due: ContinuousClock.Instant?
                        switch (wanted, asked) {
                        case let (a?, b?): due = min(a, b)
                        case let (a?, nil): due = a
                        case let (nil, b?): due = b
                        case (nil, nil): due = nil
                        }
                        guard let due, !state.stopped else { return false }
                        return state.enqueue(work, at: due) && state.idle > 0
                    }
                    if signal { wake.signal() }
                }
            }
        }
    }
}

/// Serials for ``ScheduledDelivery`` work.
enum DeliverySerial {
    private static let counter = Atomic<UInt64>(0)
    static func next() -> UInt64 { counter.wrappingAdd(1, ordering: .relaxed).newValue }
}
