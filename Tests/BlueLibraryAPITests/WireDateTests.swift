import BlueLibraryAPI
import Foundation
import TestThreads
import Testing

/// Times on the wire: whole milliseconds in UTC, read back to the same instant.
@Suite(.ownThreads)
struct WireDateTests {
    @Test func aWholeMillisecondIsWrittenAsItselfAndReadBack() throws {
        for milliseconds: Int64 in [0, 1, 123, 999, 1_733_460_000_123, 1_798_761_599_999, -1, -1_001] {
            let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            let text = WireDate.format(date)
            #expect(text.hasSuffix("Z") && text.count == 24, "\(text)")
            let read = try #require(WireDate.parse(text))
            #expect(Int64((read.timeIntervalSince1970 * 1000).rounded()) == milliseconds, "\(milliseconds): \(text)")
        }
        #expect(WireDate.format(Date(timeIntervalSince1970: 1_798_761_600.5)) == "2027-01-01T00:00:00.500Z")
    }
}
