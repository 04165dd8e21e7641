import Dispatch
import Essentials
import Foundation
import HTTPTestSupport
import Synchronization
import TestThreads
import Testing

/// `ReadBatcher`: every answer comes from a read that started after its call, calls that come
/// while a read runs share the next one, and nothing is left waiting after an error or a caller
/// that gave up.
@Suite(.ownThreads) struct ReadBatcherTests {
    /// A store whose read takes a snapshot of `version` when it starts, then waits for the test
    /// to let it finish (`release`), so the test decides what runs while a read is in flight.
    final class SlowStore: Sendable {
        let version = Atomic<Int64>(0)
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let keysRead = Mutex<[Set<String>]>([])
        let failNext = Atomic<Bool>(false)

        struct Failure: Error, Equatable {}

        func read(_ keys: Set<String>) throws -> [String: Int64] {
            let snapshot = version.load(ordering: .sequentiallyConsistent)
            keysRead.withLock { $0.append(keys) }
            started.signal()
            gate.wait()
            if failNext.exchange(false, ordering: .sequentiallyConsistent) { throw Failure() }
            return Dictionary(uniqueKeysWithValues: keys.map { ($0, snapshot) })
        }
    }

    /// Waits (bounded) until `batcher` has seen `calls` calls.
    static func waitForCalls(_ batcher: ReadBatcher<String, Int64>, _ calls: Int) throws {
        try #require(eventually(timeout: .seconds(30)) { batcher.statistics.calls >= calls }, "\(calls) calls arrived")
    }

    /// A call on its own thread.
    final class Call: Sendable {
        private let done = DispatchSemaphore(value: 0)
        private let result = Mutex<Result<[String: Int64], any Error>?>(nil)

        init(_ body: @escaping @Sendable () throws -> [String: Int64]) {
            Thread { [self] in
                result.withLock { $0 = Result { try body() } }
                done.signal()
            }.start()
        }

        /// Whether it returned (waiting at most 30 s).
        func returned() -> Bool { done.wait(timeout: .now() + 30) == .success }

        /// What it returned (after ``returned()``).
        func get() throws -> [String: Int64] { try result.withLock { try $0!.get() } }
    }

    @Test func callsThatComeWhileAReadRunsShareTheNextOneWithAllTheirKeys() throws {
        let store = SlowStore()
        let batcher = ReadBatcher<String, Int64>()
        let first = Call { try batcher.values(of: ["a"], read: store.read) }
        store.started.wait()
        // A commit finishes while the first read is in flight: later calls must see it.
        store.version.store(1, ordering: .sequentiallyConsistent)
        let second = Call { try batcher.values(of: ["b"], read: store.read) }
        let third = Call { try batcher.values(of: ["c", "b"], read: store.read) }
        try Self.waitForCalls(batcher, 3)
        store.gate.signal()  // the first read ends; the second starts, for both waiting calls
        store.started.wait()
        store.gate.signal()
        for call in [first, second, third] { #expect(call.returned()) }
        #expect(try first.get() == ["a": 0])
        #expect(try second.get() == ["b": 1, "c": 1], "the batch's read, started after the commit")
        #expect(try third.get() == ["b": 1, "c": 1])
        #expect(store.keysRead.withLock { $0 } == [["a"], ["b", "c"]])
        #expect(batcher.statistics == (reads: 2, calls: 3))
        // Idle again: a call reads at once.
        store.gate.signal()
        #expect(try batcher.values(of: ["a"], read: store.read) == ["a": 1])
        #expect(batcher.statistics == (reads: 3, calls: 4))
    }

    @Test func aFailedReadFailsItsBatchAndTheNextCallReadsAgain() throws {
        let store = SlowStore()
        let batcher = ReadBatcher<String, Int64>()
        let first = Call { try batcher.values(of: ["a"], read: store.read) }
        store.started.wait()
        let waiting = Call { try batcher.values(of: ["a"], read: store.read) }
        let alsoWaiting = Call { try batcher.values(of: ["a"], read: store.read) }
        try Self.waitForCalls(batcher, 3)
        store.gate.signal()
        store.started.wait()
        store.failNext.store(true, ordering: .sequentiallyConsistent)
        store.gate.signal()
        for call in [first, waiting, alsoWaiting] { #expect(call.returned()) }
        #expect(try first.get() == ["a": 0])
        for call in [waiting, alsoWaiting] {
            #expect(throws: SlowStore.Failure.self) { try call.get() }
        }
        store.gate.signal()
        #expect(try batcher.values(of: ["a"], read: store.read) == ["a": 0])
    }

    @Test func aCallerThatGivesUpLeavesTheReadToTheOthers() throws {
        struct GaveUp: Error {}
        let store = SlowStore()
        let batcher = ReadBatcher<String, Int64>()
        let first = Call { try batcher.values(of: ["a"], read: store.read) }
        store.started.wait()
        let reader = Call { try batcher.values(of: ["a"], read: store.read) }
        try Self.waitForCalls(batcher, 2)
        let impatient = Call { try batcher.values(of: ["b"], pollInterval: .milliseconds(1), abandon: { GaveUp() }, read: store.read) }
        #expect(impatient.returned(), "the caller that gave up returned while the read ran")
        #expect(throws: GaveUp.self) { try impatient.get() }
        store.gate.signal()
        store.started.wait()
        store.gate.signal()
        for call in [first, reader] { #expect(call.returned()) }
        #expect(try reader.get() == ["a": 0, "b": 0], "the batch still read what everyone asked")
    }

    /// Many threads at once: every answer is at least the version committed before its call.
    /// (That calls share reads is shown above, with a read the test holds open.)
    @Test func underContentionEveryAnswerIsAtLeastWhatWasCommittedBeforeTheCall() {
        let version = Atomic<Int64>(0)
        let batcher = ReadBatcher<String, Int64>()
        let stale = Atomic<Int>(0)
        let group = DispatchGroup()
        for thread in 0..<8 {
            group.enter()
            Thread {
                for _ in 0..<2_000 {
                    if thread == 0 { version.add(1, ordering: .sequentiallyConsistent) }
                    let before = version.load(ordering: .sequentiallyConsistent)
                    let got = try? batcher.values(of: ["lib"]) { keys in
                        let snapshot = version.load(ordering: .sequentiallyConsistent)
                        return Dictionary(uniqueKeysWithValues: keys.map { ($0, snapshot) })
                    }
                    if (got?["lib"] ?? -1) < before { stale.add(1, ordering: .relaxed) }
                }
                group.leave()
            }.start()
        }
        #expect(group.wait(timeout: .now() + 120) == .success)
        #expect(stale.load(ordering: .relaxed) == 0)
        #expect(batcher.statistics.calls == 16_000)
    }
}
