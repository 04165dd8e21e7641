import Dispatch
import Essentials
import Foundation
import Synchronization
import TestThreads
import Testing

@Suite(.ownThreads) struct SingleFlightTests {
    @Test func everyWaiterGetsTheOneOutcome() {
        let flight = SingleFlight<Int>()
        let results = Mutex<[Int]>([])
        let group = DispatchGroup()
        for _ in 0..<8 {
            DispatchQueue.global().async(group: group) {
                let value = flight.wait()
                results.withLock { $0.append(value) }
            }
        }
        #expect(flight.complete(42))
        #expect(!flight.complete(7), "the outcome is set once")
        #expect(group.wait(timeout: .now() + 30) == .success)
        #expect(results.withLock { $0 } == Array(repeating: 42, count: 8))
        #expect(flight.outcome == 42)
    }

    @Test func aWaitThatTimesOutGetsNil() {
        let flight = SingleFlight<String>()
        #expect(flight.wait(timeout: .zero) == nil)
        #expect(flight.wait(timeout: .milliseconds(1)) == nil)
        flight.complete("done")
        #expect(flight.wait(timeout: .zero) == "done")
        #expect(flight.wait(timeout: .seconds(5)) == "done")
    }

    @Test func deadlinesSaturateInsteadOfTrapping() {
        #expect(DispatchTime.now(plus: .seconds(Int64.max)) == .distantFuture)
        let before = DispatchTime.now()
        #expect(DispatchTime.now(plus: .seconds(-3)) >= before)
        #expect(DispatchTime.now(plus: .seconds(-3)) < before + .seconds(60))
    }
}
