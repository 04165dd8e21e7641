import Foundation
import Synchronization

/// Makes new album ids; injected into the facade so tests can choose them.
///
/// A struct of one closure rather than a protocol: there is exactly one operation and the
/// live and test versions differ only in where time and randomness come from.
public struct AlbumIDGenerator: Sendable {
    private let makeID: @Sendable () -> AlbumID

    public init(_ makeID: @escaping @Sendable () -> AlbumID) {
        self.makeID = makeID
    }

    /// Returns a fresh id.
    public func next() -> AlbumID {
        makeID()
    }

    /// Monotonic ULIDs: the time part comes from `clock`, the 80 random bits from the system
    /// generator.
    ///
    /// Rule: every id is greater than the previous one from the same generator. Within one
    /// millisecond (or if the clock steps back) the previous random part is incremented instead
    /// of drawing a new one, as the ULID spec's monotonic mode does, so ids made in a burst
    /// still sort in creation order.
    public static func random(clock: @escaping @Sendable () -> Date) -> AlbumIDGenerator {
        let state = MonotonicULIDState()
        return AlbumIDGenerator {
            let now = clock().timeIntervalSince1970 * 1000
            let milliseconds = now <= 0 ? 0 : UInt64(min(now, Double(MonotonicULIDState.maxTime)))
            return state.next(milliseconds: milliseconds)
        }
    }
}

/// The last id's parts, shared by all copies of one `.random` generator.
private final class MonotonicULIDState: Sendable {
    static let maxTime: UInt64 = (1 << 48) - 1

    private struct Last {
        var milliseconds: UInt64 = 0
        var randomHigh: UInt64 = 0 // 16 bits used
        var randomLow: UInt64 = 0
        var hasValue = false
    }

    private let last = Mutex(Last())

    func next(milliseconds: UInt64) -> AlbumID {
        last.withLock { last in
            if last.hasValue && milliseconds <= last.milliseconds {
                // Same millisecond (or clock went back): increment the 80-bit random part.
                let (low, overflow) = last.randomLow.addingReportingOverflow(1)
                last.randomLow = low
                if overflow {
                    last.randomHigh = (last.randomHigh + 1) & 0xFFFF
                    if last.randomHigh == 0 && low == 0 {
                        // 2^80 ids in one millisecond: borrow the next millisecond.
                        last.milliseconds = min(last.milliseconds + 1, Self.maxTime)
                    }
                }
            } else {
                var generator = SystemRandomNumberGenerator()
                last.milliseconds = milliseconds
                last.randomHigh = UInt64(UInt16.random(in: .min ... .max, using: &generator))
                last.randomLow = UInt64.random(in: .min ... .max, using: &generator)
                last.hasValue = true
            }
            return AlbumID(high: last.milliseconds << 16 | last.randomHigh, low: last.randomLow)
        }
    }
}
