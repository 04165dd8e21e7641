import Foundation
import Testing
@testable import Library

@Suite("Timestamps")
struct TimestampTests {
    @Test("format is RFC 3339 UTC with milliseconds")
    func format() {
        #expect(Timestamp.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp.format(Timestamp.date(milliseconds: 1_700_000_000_123)) == "2023-11-14T22:13:20.123Z")
        #expect(Timestamp.format(Timestamp.date(milliseconds: 951_782_400_000)) == "2000-02-29T00:00:00.000Z")
    }

    @Test("parse accepts offsets and fractions, and round-trips truncated dates exactly")
    func parse() {
        #expect(Timestamp.parse("2023-11-14T23:13:20.123+01:00") == Timestamp.date(milliseconds: 1_700_000_000_123))
        #expect(Timestamp.parse("2023-11-14T22:13:20Z") == Timestamp.date(milliseconds: 1_700_000_000_000))
        #expect(Timestamp.parse("2023-11-14T22:13:20.1239Z") == Timestamp.date(milliseconds: 1_700_000_000_123))
        for bad in ["2023-02-30T00:00:00Z", "2023-11-14", "2023-11-14T22:13:20", "x", "2023-11-14T22:13:20.Z"] {
            #expect(Timestamp.parse(bad) == nil, "\(bad)")
        }
        let date = Timestamp.truncated(Date(timeIntervalSince1970: 1_712_345_678.987654))
        #expect(Timestamp.parse(Timestamp.format(date)) == date)
    }
}
