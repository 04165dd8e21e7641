import Dispatch
import Essentials
import Synchronization
import TestThreads
import Testing

@Suite(.ownThreads) struct ServiceLifecycleTests {
    @Test func startsOnceStopsOnceAndNeverStartsAgain() {
        var lifecycle = ServiceLifecycle()
        #expect(lifecycle.startRequested() == .start)
        #expect(lifecycle.startRequested() == .none)
        #expect(lifecycle.stopRequested() == .stop)
        #expect(lifecycle.state == .stopping)
        #expect(lifecycle.stopRequested() == .waitForStop)
        lifecycle.stopFinished()
        #expect(lifecycle.stopRequested() == .none)
        #expect(lifecycle.startRequested() == .none, "a stopped service stays stopped")
    }

    @Test func aServiceStoppedBeforeItStartedNeverStarts() {
        var lifecycle = ServiceLifecycle()
        #expect(lifecycle.stopRequested() == .neverStarted)
        #expect(lifecycle.state == .stopping)
        #expect(lifecycle.stopRequested() == .waitForStop, "a second stop waits for the first")
        #expect(lifecycle.startRequested() == .none)
        lifecycle.stopFinished()
        #expect(lifecycle.state == .stopped)
        #expect(lifecycle.startRequested() == .none)
    }

    @Test func aFailedStartLeavesItStopped() {
        var lifecycle = ServiceLifecycle()
        #expect(lifecycle.startRequested() == .start)
        lifecycle.startFailed()
        #expect(lifecycle.state == .stopped)
        #expect(lifecycle.stopRequested() == .none)
    }
}

/// Records the order of starts and stops of its services.
private final class Journal: Sendable {
    let entries = Mutex<[String]>([])
    func note(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }

    func service(_ name: String, failing: Bool = false, stopsWithoutStart: Bool = false) -> ClosureService {
        struct Refused: Error {}
        return ClosureService(name, stopsWithoutStart: stopsWithoutStart, start: { [self] in
            note("start \(name)")
            if failing { throw Refused() }
        }, stop: { [self] in note("stop \(name)") })
    }
}

@Suite(.ownThreads) struct ServiceGroupTests {
    @Test func startsInOrderAndStopsInReverseOnce() throws {
        let journal = Journal()
        let group = ServiceGroup(["a", "b", "c"].map { journal.service($0) })
        try group.start()
        try group.start()
        group.stop()
        group.stop()
        #expect(journal.all == ["start a", "start b", "start c", "stop c", "stop b", "stop a"])
    }

    @Test func aFailedStartStopsWhatStartedInReverseAndRethrows() {
        let journal = Journal()
        let group = ServiceGroup([journal.service("a"), journal.service("b"), journal.service("c", failing: true), journal.service("d")])
        #expect(throws: (any Error).self) { try group.start() }
        #expect(journal.all == ["start a", "start b", "start c", "stop b", "stop a"])
    }

    @Test func aGroupNeverStartedClosesOnlyWhatLivesFromConstruction() {
        let journal = Journal()
        let group = ServiceGroup([journal.service("database", stopsWithoutStart: true), journal.service("thread")])
        group.stop()
        #expect(journal.all == ["stop database"])
    }

    @Test func concurrentStopsRunTheStopsOnceAndAllReturnAfterThem() {
        let journal = Journal()
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let slow = ClosureService("slow", start: {}, stop: {
            entered.signal()
            release.wait()
            journal.note("stop slow")
        })
        let group = ServiceGroup([slow])
        try? group.start()
        let returned = Mutex(0)
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<3 {
            startThread(named: "stopper") {
                group.stop()
                returned.withLock { $0 += 1 }
                done.signal()
            }
        }
        entered.wait()
        #expect(returned.withLock { $0 } == 0, "no stop returns while the stop runs")
        release.signal()
        for _ in 0..<3 { done.wait() }
        #expect(journal.all == ["stop slow"])
    }
}

@Suite(.ownThreads) struct BackgroundLoopTests {
    @Test func passNowRunsAPassWithoutWaitingOutTheInterval() {
        let loop = BackgroundLoop(name: "test-loop", interval: .seconds(3600))
        let passes = Mutex(0)
        loop.start { { passes.withLock { $0 += 1 } } }
        #expect(loop.passNow(timeout: .seconds(10)))
        #expect(passes.withLock { $0 } == 1)
        #expect(loop.passNow(timeout: .seconds(10)))
        #expect(passes.withLock { $0 } == 2)
        loop.stop()
        #expect(!loop.passNow(timeout: .seconds(1)), "a stopped loop runs no pass")
        #expect(passes.withLock { $0 } == 2)
    }

    /// On a manual clock the interval passes when the clock is advanced past it, not before,
    /// and not on the wall clock: no test waits out an interval.
    @Test func theIntervalIsTheClocks() {
        let clock = ManualClock()
        let loop = BackgroundLoop(name: "test-loop", interval: .seconds(60), clock: clock)
        loop.start { {} }
        defer { loop.stop() }
        clock.advance(by: .seconds(30))
        #expect(loop.finishedPasses == 0)
        clock.advance(by: .seconds(30))
        #expect(loop.waitForPasses(1, timeout: .seconds(10)), "a minute on the clock is the interval")
        clock.advance(by: .seconds(59))
        clock.advance(by: .seconds(1))
        #expect(loop.waitForPasses(2, timeout: .seconds(10)), "and another from that pass on")
        #expect(loop.passNow(timeout: .seconds(10)), "a wake-up still runs a pass at once")
        #expect(loop.finishedPasses == 3)
    }

    @Test func stateMadeOnTheThreadIsReleasedBeforeStopReturns() {
        let released = Box()
        let loop = BackgroundLoop(name: "test-loop", interval: .seconds(3600))
        loop.start {
            let held = Tracked(released)
            return { _ = held }
        }
        #expect(loop.passNow(timeout: .seconds(10)))
        #expect(!released.value)
        loop.stop()
        #expect(released.value)
    }
}

private final class Box: Sendable {
    private let flag = Mutex(false)
    var value: Bool { flag.withLock { $0 } }
    func set() { flag.withLock { $0 = true } }
}

private final class Tracked {
    let box: Box
    init(_ box: Box) { self.box = box }
    deinit { box.set() }
}
