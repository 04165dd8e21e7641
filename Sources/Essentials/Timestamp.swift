#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Timestamps as the service stores and shows them: UTC, millisecond precision, RFC 3339
/// (`2024-05-01T12:34:56.789Z`, <https://www.rfc-editor.org/rfc/rfc3339>). The one formatter
/// and parser in the project: album and state dates, archives, cursors and log lines.
///
/// Rule: every time the domain records is first truncated to whole milliseconds
/// (`Timestamp.truncated`). Text round trips (JSON, archives, SQLite) then give back exactly
/// the same `Date`, so an exported and re-imported library compares equal.
///
/// ```swift
/// Timestamp.format(Timestamp.date(milliseconds: 1_700_000_000_123))  // "2023-11-14T22:13:20.123Z"
/// Timestamp.parse("2023-11-14T23:13:20.123+01:00")                  // the same Date
/// Timestamp.append(milliseconds: ms, to: &bytes)                     // no String on hot paths
/// ```
public enum Timestamp {
    /// `date` truncated (towards the past) to a whole millisecond.
    public static func truncated(_ date: Date) -> Date {
        Self.date(milliseconds: milliseconds(date))
    }

    /// Whole milliseconds since 1970, rounded towards the past — except that a date within
    /// 0.1 ms of a whole millisecond is that millisecond. `Date` counts from 2001 in a Double,
    /// so a date built from whole milliseconds can sit a hair below its millisecond (e.g.
    /// `date(milliseconds: -1)`); plain flooring would then give the millisecond before, and
    /// text, cursors and stored values would not round-trip. (The error is at most ~0.03 ms
    /// even in year 9999.)
    public static func milliseconds(_ date: Date) -> Int64 {
        let exact = date.timeIntervalSince1970 * 1000
        let nearest = exact.rounded()
        return Int64(abs(exact - nearest) < 0.1 ? nearest : exact.rounded(.down))
    }

    /// The date `milliseconds` after 1970; the one way the domain builds dates from numbers.
    public static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// Milliseconds since 1970 on the wall clock (CLOCK_REALTIME), for log lines.
    public static func nowMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec / 1_000_000)
    }

    /// RFC 3339 text in UTC with exactly three fraction digits.
    public static func format(_ date: Date) -> String {
        format(milliseconds: milliseconds(date))
    }

    /// RFC 3339 text in UTC with exactly three fraction digits for `milliseconds` since 1970.
    public static func format(milliseconds: Int64) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        append(milliseconds: milliseconds, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the text of ``format(milliseconds:)`` to `bytes` (no quotes, no String made).
    public static func append(milliseconds total: Int64, to bytes: inout [UInt8]) {
        let (days, msOfDay) = floorDivide(total, 86_400_000)
        let (year, month, day) = civil(fromDays: days)
        let seconds = msOfDay / 1000
        appendPadded(year, width: 4, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendPadded(month, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendPadded(day, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "T"))
        appendPadded(seconds / 3600, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        appendPadded(seconds / 60 % 60, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        appendPadded(seconds % 60, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "."))
        appendPadded(msOfDay % 1000, width: 3, to: &bytes)
        bytes.append(UInt8(ascii: "Z"))
    }

    /// Appends `date` as a quoted JSON string (timestamps never need escaping).
    public static func appendQuoted(_ date: Date, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        append(milliseconds: milliseconds(date), to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Parses RFC 3339 text (`Z` or `±hh:mm` offset, optional fraction — digits beyond
    /// milliseconds are dropped); `nil` when the text is not such a timestamp.
    public static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse(utf8: $0) }
    }

    /// ``parse(_:)`` over UTF-8 bytes.
    public static func parse(utf8: UnsafeBufferPointer<UInt8>) -> Date? {
        parseMilliseconds(utf8: utf8).map { date(milliseconds: $0) }
    }

    /// Milliseconds since 1970 of RFC 3339 text; `nil` when the text is not such a timestamp.
    public static func parseMilliseconds(utf8: UnsafeBufferPointer<UInt8>) -> Int64? {
        var scanner = DigitScanner(utf8)
        guard let year = scanner.number(4), scanner.skip("-"),
              let month = scanner.number(2), scanner.skip("-"),
              let day = scanner.number(2), scanner.skip("T") || scanner.skip("t") || scanner.skip(" "),
              let hour = scanner.number(2), scanner.skip(":"),
              let minute = scanner.number(2), scanner.skip(":"),
              let second = scanner.number(2)
        else { return nil }
        var millis: Int64 = 0
        if scanner.skip(".") {
            var digits = 0
            while let digit = scanner.digit() {
                if digits < 3 { millis = millis * 10 + digit }
                digits += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 3) { millis *= 10 }
        }
        var offsetMinutes: Int64 = 0
        if scanner.skip("Z") || scanner.skip("z") {
            offsetMinutes = 0
        } else {
            let sign: Int64
            if scanner.skip("+") { sign = 1 } else if scanner.skip("-") { sign = -1 } else { return nil }
            guard let offsetHours = scanner.number(2), scanner.skip(":"), let offsetMins = scanner.number(2),
                  offsetHours < 24, offsetMins < 60 else { return nil }
            offsetMinutes = sign * (offsetHours * 60 + offsetMins)
        }
        guard scanner.atEnd, (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
              hour < 24, minute < 60, second < 61 else { return nil }
        let days = self.days(fromCivil: year, month, day)
        return ((days * 24 + hour) * 60 + minute - offsetMinutes) * 60_000 + min(second, 59) * 1000 + millis
    }

    // MARK: - Calendar arithmetic (proleptic Gregorian, H. Hinnant's days_from_civil)

    private static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let quotient = value >= 0 ? value / divisor : (value - divisor + 1) / divisor
        return (quotient, value - quotient * divisor)
    }

    /// The decimal text of `value`, left-padded with zeros to `width` characters (a negative
    /// year keeps its sign after the zeros, as it always has).
    private static func appendPadded(_ value: Int64, width: Int, to bytes: inout [UInt8]) {
        guard value >= 0 else {
            let text = String(value).utf8
            for _ in 0..<max(0, width - text.count) { bytes.append(UInt8(ascii: "0")) }
            bytes.append(contentsOf: text)
            return
        }
        var digits = 1
        var power: Int64 = 10
        while digits < 19, value >= power {
            digits += 1
            power &*= 10
        }
        for _ in 0..<max(0, width - digits) { bytes.append(UInt8(ascii: "0")) }
        let start = bytes.count
        for _ in 0..<digits { bytes.append(0) }
        var rest = value
        var position = bytes.count - 1
        while position >= start {
            bytes[position] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
            position -= 1
        }
    }
}

/// A cursor over ASCII bytes for the fixed-width fields of a timestamp.
private struct DigitScanner {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    var atEnd: Bool { position == bytes.count }

    mutating func digit() -> Int64? {
        guard position < bytes.count, bytes[position] >= 48, bytes[position] <= 57 else { return nil }
        defer { position += 1 }
        return Int64(bytes[position] - 48)
    }

    mutating func number(_ width: Int) -> Int64? {
        var value: Int64 = 0
        for _ in 0..<width {
            guard let digit = digit() else { return nil }
            value = value * 10 + digit
        }
        return value
    }

    mutating func skip(_ character: Unicode.Scalar) -> Bool {
        guard position < bytes.count, bytes[position] == UInt8(ascii: character) else { return false }
        position += 1
        return true
    }
}
