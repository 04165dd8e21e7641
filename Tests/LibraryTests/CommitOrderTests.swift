import Dispatch
import Foundation
import Synchronization
import TestThreads
import Testing
@testable import Library

/// `CommitOrder`: what follows commits runs in ticket (commit) order, whoever finishes first.
@Suite("Commit order of published events", .ownThreads)
struct CommitOrderTests {
    final class Log: Sendable {
        let entries = Mutex<[Int]>([])
        func append(_ value: Int) -> @Sendable () -> Void { { [self] in entries.withLock { $0.append(value) } } }
        var values: [Int] { entries.withLock { $0 } }
    }

    @Test("follow-ups finished out of order run in ticket order, once the earliest is finished")
    func ticketOrder() {
        let order = CommitOrder()
        let log = Log()
        let tickets = (0..<4).map { _ in order.take() }
        order.finish(tickets[2], log.append(2))
        order.finish(tickets[1], log.append(1))
        #expect(log.values == [], "ticket 0 is still out")
        order.finish(tickets[0], log.append(0))
        #expect(log.values == [0, 1, 2])
        order.finish(tickets[3], log.append(3))
        #expect(log.values == [0, 1, 2, 3])
    }

    @Test("a failed mutation's ticket finishes with nothing and lets the next ones run")
    func failedTicket() {
        let order = CommitOrder()
        let log = Log()
        let first = order.take()
        let second = order.take()
        order.finish(second, log.append(2))
        order.finish(first, nil)
        #expect(log.values == [2])
    }

    @Test("many threads finishing at once: every follow-up runs once, in ticket order")
    func concurrentFinishers() {
        let order = CommitOrder()
        let log = Log()
        let tickets = (0..<200).map { _ in order.take() }
        DispatchQueue.concurrentPerform(iterations: tickets.count) { index in
            // Every third mutation failed.
            order.finish(tickets[index], index % 3 == 0 ? nil : log.append(index))
        }
        #expect(log.values == (0..<200).filter { $0 % 3 != 0 })
    }
}
