import BlueLibraryAPI
import TestThreads
import Testing

/// RFC 4180 quoting and the formula prefix, written and read back.
@Suite(.ownThreads) struct CSVWriterTests {
    static func written(_ rows: [[CSVCell]]) -> String {
        var writer = CSVWriter()
        for row in rows { writer.appendRow(row) }
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    @Test func plainCellsAreWrittenAsTheyAreWithCRLFLineEnds() {
        #expect(Self.written([[.text("Abbey Road"), .text("The Beatles"), .number(1969), .empty]]) == "Abbey Road,The Beatles,1969,\r\n")
        #expect(Self.written([[.text("a")], [], [.empty, .empty]]) == "a\r\n\r\n,\r\n")
    }

    @Test func cellsWithCommasQuotesOrLineBreaksAreQuotedWithQuotesDoubled() {
        #expect(Self.written([[.text("Crosby, Stills & Nash")]]) == "\"Crosby, Stills & Nash\"\r\n")
        #expect(Self.written([[.text("say \"hi\"")]]) == "\"say \"\"hi\"\"\"\r\n")
        #expect(Self.written([[.text("\"")]]) == "\"\"\"\"\r\n")
        #expect(Self.written([[.text("two\nlines")]]) == "\"two\nlines\"\r\n")
        #expect(Self.written([[.text("two\r\nlines")]]) == "\"two\r\nlines\"\r\n")
        #expect(Self.written([[.text("a\rb")]]) == "\"a\rb\"\r\n")
        #expect(Self.written([[.text("it's; fine")]]) == "it's; fine\r\n")
    }

    static let texts = [
        "Crosby, Stills & Nash", "say \"hi\"", "\"\"", "\",\"", "two\nlines", "two\r\nlines", "a\rb", "trailing\n",
        "Björk", "Sigur Rós", "Mötley Crüe", "坂本龍一", "東京事変, 教育", "Виктор Цой", "🎸 Rock 'n' Roll 🤘", "👩🏽‍🎤\"✨\"",
        " spaced ", "", "x",
    ]

    @Test func textsComeBackUnchangedFromTheReader() throws {
        let rows = Self.texts.map { [CSVCell.text($0), .number(7), .text($0)] }
        var writer = CSVWriter()
        for row in rows { writer.appendRow(row) }
        let records = try CSVReader.records(writer.bytes)
        #expect(records.map(\.fields) == Self.texts.map { [$0, "7", $0] })
    }

    static let formulas = ["=SUM(1)", "+1", "-1", "@cmd", "\tTab", "=HYPERLINK(\"http://x\",\"y\")", "-", "@"]

    @Test(arguments: formulas)
    func textStartingAFormulaIsPrefixedWithAQuote(_ text: String) throws {
        var bytes: [UInt8] = []
        CSVWriter.appendText(text, to: &bytes)
        let written = String(decoding: bytes, as: UTF8.self)
        let needsQuotes = text.contains(",") || text.contains("\"")
        let prefixed = "'" + text.replacingQuotes()
        #expect(written == (needsQuotes ? "\"\(prefixed)\"" : prefixed))
        #expect(try CSVReader.records(bytes + [13, 10]).map(\.fields) == [["'" + text]])
    }

    @Test func textStartingWithCRIsPrefixedAndQuoted() throws {
        var bytes: [UInt8] = []
        CSVWriter.appendText("\r=1", to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "\"'\r=1\"")
        #expect(try CSVReader.records(bytes).map(\.fields) == [["'\r=1"]])
    }

    @Test func onlyTheFirstCharacterCounts() {
        #expect(Self.written([[.text("Abbey Road"), .text("1+1=2"), .text("x=1"), .text("a-ha"), .text(" =1"), .text("'quoted")]])
            == "Abbey Road,1+1=2,x=1,a-ha, =1,'quoted\r\n")
        for byte in UInt8(0x00)...0x7F where ![0x3D, 0x2B, 0x2D, 0x40, 0x09, 0x0D].contains(byte) {
            #expect(!CSVWriter.startsFormula(byte), "\(byte)")
        }
    }

    @Test func numbersAreNeverPrefixed() {
        #expect(Self.written([[.number(-1), .number(0), .number(42), .number(1_000_000), .number(Int.min), .number(Int.max)]])
            == "-1,0,42,1000000,\(Int.min),\(Int.max)\r\n")
        #expect(Self.written([[.number(nil), .text(nil)]]) == ",\r\n")
    }
}

extension String {
    /// The text with each double quote doubled, as a quoted CSV field holds it.
    fileprivate func replacingQuotes() -> String {
        split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\"\"")
    }
}
