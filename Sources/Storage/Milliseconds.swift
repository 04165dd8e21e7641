import Foundation
import Library

/// How the store turns `Date`s into integer milliseconds (the `created_at`, `updated_at`
/// columns) and back.
///
/// Reading uses `Timestamp.date(milliseconds:)`, the domain's one way to build dates. Writing
/// cannot simply use `Timestamp.milliseconds`: it floors `timeIntervalSince1970 * 1000`, and
/// Double rounding (`Date` counts from 2001) puts some whole-millisecond dates a hair below
/// their millisecond — `Timestamp.date(milliseconds: -1)` floors back to -2. So a date within
/// 0.1 ms of a whole millisecond is that millisecond (the error is at most ~0.03 ms even in
/// year 9999); any other date is truncated towards the past, as the domain does.
/// Result: every whole-millisecond date the domain makes round-trips exactly.
enum Milliseconds {
    static func from(_ date: Date) -> Int64 {
        let exact = date.timeIntervalSince1970 * 1000
        let nearest = exact.rounded()
        return Int64(abs(exact - nearest) < 0.1 ? nearest : exact.rounded(.down))
    }

    static func date(_ milliseconds: Int64) -> Date {
        Timestamp.date(milliseconds: milliseconds)
    }
}
