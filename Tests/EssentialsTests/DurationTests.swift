import Essentials
import TestThreads
import Testing

@Suite(.ownThreads) struct DurationTests {
    @Test func convertsToNanosecondsAndMilliseconds() {
        #expect(Duration.milliseconds(1500).nanoseconds == 1_500_000_000)
        #expect(Duration.microseconds(3).nanoseconds == 3_000)
        #expect(Duration.milliseconds(1500).milliseconds == 1500)
        #expect(Duration.nanoseconds(999_999).milliseconds == 0)
        #expect(Duration.milliseconds(250).seconds == 0.25)
    }

    @Test func negativeIsZeroAndHugeSaturates() {
        #expect(Duration.seconds(-5).nanoseconds == 0)
        #expect(Duration.milliseconds(-1).milliseconds == 0)
        #expect(Duration.seconds(Int64.max).nanoseconds == UInt64.max)
        #expect(Duration.seconds(Int64.max).milliseconds == Int64.max)
    }

    @Test func manualClockMovesOnlyWhenAdvanced() {
        let clock = ManualClock(startingAt: 10)
        #expect(clock.nanoseconds() == 10)
        clock.advance(by: .milliseconds(2))
        #expect(clock.nanoseconds() == 2_000_010)
    }

    @Test func systemClockNeverGoesBack() {
        let clock = SystemClock()
        let first = clock.nanoseconds()
        #expect(clock.nanoseconds() >= first)
    }
}
