import Foundation
import ServerRecords
import TestThreads
import Testing

@Suite(.ownThreads) struct FailedAttemptsTests {
    @Test func lockoutRule() {
        let start = Date(timeIntervalSince1970: 1_000_000)
        var record: FailedAttempts? = nil
        for i in 1...3 {
            record = FailedAttempts.afterFailure(record, now: start.addingTimeInterval(Double(i)), limit: 3, interval: 60)
        }
        #expect(record?.count == 3)
        #expect(record?.lockedUntil == start.addingTimeInterval(63))
        #expect(record?.lockRemaining(at: start.addingTimeInterval(10)) == 53)
        #expect(record?.lockRemaining(at: start.addingTimeInterval(63)) == nil)
        // A failure after the window starts a new count.
        let fresh = FailedAttempts.afterFailure(FailedAttempts(count: 2, windowStart: start), now: start.addingTimeInterval(61), limit: 3, interval: 60)
        #expect(fresh.count == 1 && fresh.lockedUntil == nil)
    }
}
