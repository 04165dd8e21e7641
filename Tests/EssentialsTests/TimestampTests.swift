import Foundation
import TestThreads
import Testing
import Essentials

@Suite("Timestamps", .ownThreads)
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

@Suite("Timestamp bytes", .ownThreads)
struct TimestampBytesTests {
    @Test("append writes the same text as format, with no String in between")
    func appendMatchesFormat() {
        for millis: Int64 in [0, 1, 999, 1_700_000_000_123, 951_782_400_000, 253_402_300_799_999, -1, -86_400_001] {
            var bytes: [UInt8] = []
            Timestamp.append(milliseconds: millis, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == Timestamp.format(Timestamp.date(milliseconds: millis)))
        }
        var quoted: [UInt8] = []
        Timestamp.appendQuoted(Timestamp.date(milliseconds: 5), to: &quoted)
        #expect(String(decoding: quoted, as: UTF8.self) == "\"1970-01-01T00:00:00.005Z\"")
        #expect(Timestamp.format(milliseconds: -1) == "1969-12-31T23:59:59.999Z")
        #expect(Timestamp.format(milliseconds: 253_402_300_799_999) == "9999-12-31T23:59:59.999Z")
    }

    @Test("the wall clock reading is after 2020 and formats as a log time")
    func now() {
        let millis = Timestamp.nowMilliseconds()
        #expect(millis > 1_577_836_800_000)
        #expect(Timestamp.format(milliseconds: millis).utf8.count == 24)
    }
}
