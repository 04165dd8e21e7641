import Essentials
import TestThreads
import Testing

@Suite(.ownThreads) struct BackoffTests {
    @Test func doublesFromTheFirstPauseUpToTheLongest() {
        let backoff = Backoff(first: .milliseconds(100), longest: .seconds(2))
        #expect(backoff.delay(afterFailures: 0) == .zero)
        #expect((1...7).map { backoff.delay(afterFailures: $0) }
            == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600), .seconds(2), .seconds(2)])
        #expect(backoff.delay(afterFailures: 10_000) == .seconds(2), "no overflow after many failures")
    }
}
