import Essentials
import TestThreads
import Testing
@testable import HTTPServer

/// A connection's decisions without a socket and without sleeping: `ConnectionStateMachine`
/// driven event by event, with time from a `ManualClock`.
@Suite(.ownThreads) struct ConnectionStateTests {
    typealias Machine = ConnectionStateMachine

    static func limits() -> HTTPServerLimits {
        var limits = HTTPServerLimits()
        limits.headTimeout = .seconds(10)
        limits.idleTimeout = .seconds(60)
        limits.bodyTimeout = .seconds(30)
        limits.minBodyBytesPerSecond = 1000
        limits.bodyRateGracePeriod = .seconds(10)
        limits.writeTimeout = .seconds(20)
        limits.lingerTimeout = .seconds(5)
        return limits
    }

    static func machine(_ clock: ManualClock, _ limits: HTTPServerLimits = limits()) -> Machine {
        Machine(timeouts: .init(limits), now: clock.nanoseconds())
    }

    static let keepAlive = Connection.ResponseFraming(isHead: false, version: .http1_1, keepAlive: true)

    /// A POST whose Content-Length body is still to come.
    static func upload(length: Int) throws -> Connection.PendingRequest {
        let head = HTTPRequestHead(
            method: .post, target: "/upload", version: .http1_1, headers: HTTPHeaders([("Host", "test")]),
            framing: .length(length), expectsContinue: false, wantsKeepAlive: true)
        return Connection.PendingRequest(
            head: head, resolution: RouterBuilder().build().resolve(method: .post, path: "/upload"),
            decoder: try HTTPBodyDecoder(framing: .length(length), limit: 1 << 30), receivedAt: .now)
    }

    /// Answers the request in process and queues the response whole (flushed at once).
    static func respond(_ machine: inout Machine, _ clock: ManualClock, keepAlive: Bool = true) {
        machine.responseFinished(keepAlive: keepAlive, outputEmpty: true, inputDrained: true, now: clock.nanoseconds())
    }

    // MARK: Head timeout

    @Test func aHeadNotCompleteWhenTheClockPassesHeadTimeoutGets408() {
        let clock = ManualClock()
        var machine = Self.machine(clock)
        clock.advance(by: .seconds(2))
        machine.headBytesArrived(now: clock.nanoseconds())
        // More bytes of the same head (a trickle) do not move the deadline.
        for _ in 0..<9 {
            clock.advance(by: .milliseconds(999))
            machine.headBytesArrived(now: clock.nanoseconds())
            #expect(!machine.isDue(now: clock.nanoseconds()))
        }
        clock.advance(by: .seconds(10) - .milliseconds(8_991) - .nanoseconds(1))
        #expect(!machine.isDue(now: clock.nanoseconds()), "not a nanosecond before headTimeout")
        clock.advance(by: .nanoseconds(1))
        #expect(machine.isDue(now: clock.nanoseconds()), "due once the clock reaches headTimeout after the first byte")
        #expect(machine.timedOut(hasBufferedInput: true, outputEmpty: true) == .requestTimeout(Machine.headTimeoutDetail))
        // With a response still being written, the client is not sent a 408 on top of it.
        #expect(machine.timedOut(hasBufferedInput: true, outputEmpty: false) == .close(counted: false))
    }

    @Test func theNextHeadGetsAFreshHeadTimeout() {
        let clock = ManualClock()
        var machine = Self.machine(clock)
        machine.headBytesArrived(now: clock.nanoseconds())
        clock.advance(by: .seconds(9))
        machine.dispatch(framing: Self.keepAlive)
        Self.respond(&machine, clock)
        clock.advance(by: .seconds(5))
        machine.headBytesArrived(now: clock.nanoseconds())
        clock.advance(by: .seconds(9))
        #expect(!machine.isDue(now: clock.nanoseconds()), "the second head's 10 s run from its own first byte")
        clock.advance(by: .seconds(1))
        #expect(machine.isDue(now: clock.nanoseconds()))
    }

    // MARK: Idle keep-alive and writes

    @Test func anIdleKeepAliveConnectionClosesAfterIdleTimeout() {
        let clock = ManualClock()
        var machine = Self.machine(clock)
        clock.advance(by: .seconds(59))
        #expect(!machine.isDue(now: clock.nanoseconds()))
        machine.headBytesArrived(now: clock.nanoseconds())
        machine.dispatch(framing: Self.keepAlive)
        #expect(!machine.isDue(now: .max - 1), "a request in process is not timed")
        clock.advance(by: .seconds(30))
        Self.respond(&machine, clock)
        #expect(machine.closing == .no)
        clock.advance(by: .seconds(60) - .nanoseconds(1))
        #expect(!machine.isDue(now: clock.nanoseconds()))
        clock.advance(by: .nanoseconds(1))
        #expect(machine.isDue(now: clock.nanoseconds()))
        // Idle: closed without a response.
        #expect(machine.timedOut(hasBufferedInput: false, outputEmpty: true) == .close(counted: false))
    }

    @Test func aClientThatStopsReadingHasWriteTimeoutThenIdleTimeoutOnceItReads() {
        let clock = ManualClock()
        var machine = Self.machine(clock)
        machine.headBytesArrived(now: clock.nanoseconds())
        machine.dispatch(framing: Self.keepAlive)
        // A large response: part of it stays queued.
        machine.responseFinished(keepAlive: true, outputEmpty: false, inputDrained: true, now: clock.nanoseconds())
        clock.advance(by: .seconds(19))
        machine.wroteSome(now: clock.nanoseconds())
        clock.advance(by: .seconds(19))
        #expect(!machine.isDue(now: clock.nanoseconds()), "progress renews writeTimeout")
        clock.advance(by: .seconds(1))
        #expect(machine.isDue(now: clock.nanoseconds()))
        #expect(machine.timedOut(hasBufferedInput: false, outputEmpty: false) == .close(counted: false))

        // Had the client read the rest, the idle timeout would run from then.
        machine.outputDrained(inputDrained: true, now: clock.nanoseconds())
        clock.advance(by: .seconds(59))
        #expect(!machine.isDue(now: clock.nanoseconds()))
    }

    @Test func aSlowHandlerIsNotTimedButABlockedWriteIs() {
        let clock = ManualClock()
        var machine = Self.machine(clock)
        machine.headBytesArrived(now: clock.nanoseconds())
        machine.dispatch(framing: Self.keepAlive)
        machine.outputDrained(inputDrained: true, now: clock.nanoseconds())
        clock.advance(by: .seconds(3600))
        #expect(!machine.isDue(now: clock.nanoseconds()), "a handler may take its time")
        machine.writeBlocked(now: clock.nanoseconds())
        clock.advance(by: .seconds(20))
        #expect(machine.isDue(now: clock.nanoseconds()), "a client that does not read has writeTimeout")
    }

    // MARK: Request bodies

    @Test func aBodyBelowTheMinimumRateIsCutAfterTheGracePeriod() throws {
        let clock = ManualClock()
        var machine = Self.machine(clock)
        machine.headBytesArrived(now: clock.nanoseconds())
        machine.awaitBody(try Self.upload(length: 1_000_000), now: clock.nanoseconds())
        // 20 s a little above the minimum rate (1,000 bytes a second): never due.
        for _ in 0..<20 {
            clock.advance(by: .seconds(1))
            machine.bodyBytesArrived(1100, now: clock.nanoseconds())
            #expect(!machine.isDue(now: clock.nanoseconds()))
        }
        // Then a trickle: a byte a second never trips bodyTimeout, but the average falls
        // below the rate once the 22,000-odd bytes received stop covering the time (22 s).
        var seconds = 20
        while !machine.isDue(now: clock.nanoseconds()) && seconds < 100 {
            clock.advance(by: .seconds(1))
            seconds += 1
            machine.bodyBytesArrived(1, now: clock.nanoseconds())
        }
        #expect(seconds == 23, "due when the bytes received stop covering the elapsed time (after \(seconds) s)")
        #expect(machine.timedOut(hasBufferedInput: true, outputEmpty: true) == .requestTimeout(Machine.bodyTimeoutDetail))
    }

    @Test func aStalledBodyIsCutAfterBodyTimeoutWithoutTheRateCheck() throws {
        var limits = Self.limits()
        limits.minBodyBytesPerSecond = 0
        let clock = ManualClock()
        var machine = Self.machine(clock, limits)
        machine.awaitBody(try Self.upload(length: 10), now: clock.nanoseconds())
        clock.advance(by: .seconds(29))
        machine.bodyBytesArrived(3, now: clock.nanoseconds())
        clock.advance(by: .seconds(29))
        #expect(!machine.isDue(now: clock.nanoseconds()), "each byte renews bodyTimeout")
        clock.advance(by: .seconds(1))
        #expect(machine.isDue(now: clock.nanoseconds()))
        #expect(machine.timedOut(hasBufferedInput: false, outputEmpty: true) == .requestTimeout(Machine.bodyTimeoutDetail))
        // A 100 Continue still queued: closed (and counted) rather than answered.
        #expect(machine.timedOut(hasBufferedInput: false, outputEmpty: false) == .close(counted: true))
    }

    @Test func aWholeBodyGoesToTheResponderAndTheConnectionCarriesOn() throws {
        let clock = ManualClock()
        var machine = Self.machine(clock)
        machine.awaitBody(try Self.upload(length: 3), now: clock.nanoseconds())
        #expect(machine.parsesInput)
        let taken = machine.takeBodyRequest()
        var (pending, progress) = try #require(taken)
        #expect(!machine.parsesInput, "while the body is decoded the request is out of the phase")
        _ = try pending.decoder.consume(Array("ab".utf8), from: 0)
        machine.bodyIncomplete(pending, progress)
        let takenAgain = machine.takeBodyRequest()
        (pending, progress) = try #require(takenAgain)
        _ = try pending.decoder.consume(Array("c".utf8), from: 0)
        #expect(pending.decoder.isComplete)
        machine.dispatch(framing: Self.keepAlive)
        #expect(machine.waitsForResponder)
        Self.respond(&machine, clock)
        #expect(machine.parsesInput && machine.closing == .no)
    }

    // MARK: Pipelining

    @Test func pipelinedRequestsWaitInTheBufferUntilTheResponseInFrontIsQueued() {
        let clock = ManualClock()
        var machine = Self.machine(clock)
        for _ in 0..<3 {
            // Several requests are buffered; the connection parses one, then stops reading
            // and parsing until its response is queued: responses leave in request order.
            #expect(machine.parsesInput)
            machine.headBytesArrived(now: clock.nanoseconds())
            machine.dispatch(framing: Self.keepAlive)
            #expect(!machine.parsesInput)
            #expect(machine.waitsForResponder)
            #expect(!machine.wantsMoreInput(hasBufferedInput: true, socketReadable: true))
            Self.respond(&machine, clock)
            #expect(!machine.waitsForResponder)
            #expect(machine.wantsMoreInput(hasBufferedInput: true, socketReadable: false))
        }
    }

    // MARK: Closing

    @Test func anErrorAnswerClosesByLingeringWithinItsBounds() {
        let clock = ManualClock()
        var machine = Self.machine(clock)
        machine.headBytesArrived(now: clock.nanoseconds())
        machine.answerWithError(version: .http1_1)
        #expect(machine.responseFraming?.keepAlive == false)
        machine.responseFinished(keepAlive: false, outputEmpty: false, inputDrained: true, now: clock.nanoseconds())
        #expect(machine.closing == .whenFlushedAfterError)
        #expect(machine.shouldLinger(hasUnreadInput: false, socketReadable: false), "the client may still be sending")
        machine.beginLingering(maxBytes: 10, now: clock.nanoseconds())
        #expect(machine.isLingering)
        let boundAfterSix = machine.discarded(6)
        #expect(!boundAfterSix)
        let boundAfterTen = machine.discarded(4)
        #expect(boundAfterTen, "lingerMaxBytes reached")
        clock.advance(by: .seconds(5))
        #expect(machine.isDue(now: clock.nanoseconds()), "lingerTimeout reached")
        #expect(machine.timedOut(hasBufferedInput: false, outputEmpty: true) == .close(counted: false))
    }

    @Test func aClosingResponseWithNothingUnreadClosesWithoutLingering() {
        let clock = ManualClock()
        var machine = Self.machine(clock)
        machine.dispatch(framing: .init(isHead: false, version: .http1_0, keepAlive: false))
        Self.respond(&machine, clock, keepAlive: false)
        #expect(machine.closing == .whenFlushed)
        #expect(!machine.shouldLinger(hasUnreadInput: false, socketReadable: false))
        #expect(machine.shouldLinger(hasUnreadInput: true, socketReadable: false))
    }

    @Test func aClientThatLeavesStillGetsTheResponseInProcess() {
        let clock = ManualClock()
        var machine = Self.machine(clock)
        machine.dispatch(framing: Self.keepAlive)
        let closesAtOnce = machine.peerLeft(outputEmpty: true)
        #expect(!closesAtOnce, "half-closed clients still get their response")
        #expect(machine.closing == .whenFlushed)
        Self.respond(&machine, clock)
        #expect(!machine.shouldLinger(hasUnreadInput: true, socketReadable: true), "nobody left to reset")

        var idle = Self.machine(clock)
        let idleClosesAtOnce = idle.peerLeft(outputEmpty: true)
        #expect(idleClosesAtOnce, "an idle connection whose client left closes at once")
    }

    @Test func aDrainClosesIdleConnectionsAndLetsBusyOnesFinish() {
        let clock = ManualClock()
        var idle = Self.machine(clock)
        let idleAction = idle.drain(inputDrained: true, outputEmpty: true)
        #expect(idleAction == .close)

        var writing = Self.machine(clock)
        let writingAction = writing.drain(inputDrained: true, outputEmpty: false)
        #expect(writingAction == .none)
        #expect(writing.closing == .whenFlushed)

        var busy = Self.machine(clock)
        busy.dispatch(framing: Self.keepAlive)
        let busyAction = busy.drain(inputDrained: true, outputEmpty: true)
        #expect(busyAction == .none)
        #expect(busy.closing == .no)
        Self.respond(&busy, clock)
        #expect(busy.closing == .whenFlushed, "no further request once the server drains")
    }
}
