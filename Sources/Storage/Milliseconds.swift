import Essentials
import Foundation
import Library

/// How the store turns `Date`s into integer milliseconds (the `created_at`, `updated_at`
/// columns) and back: the domain's own rules (`Timestamp.milliseconds` / `date(milliseconds:)`),
/// under which every whole-millisecond date round-trips exactly.
enum Milliseconds {
    static func from(_ date: Date) -> Int64 {
        Timestamp.milliseconds(date)
    }

    static func date(_ milliseconds: Int64) -> Date {
        Timestamp.date(milliseconds: milliseconds)
    }
}
