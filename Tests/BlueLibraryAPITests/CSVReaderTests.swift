import BlueLibraryAPI
import TestThreads
import Testing

/// Records and their lines from what spreadsheets write, and each malformed kind at its place.
@Suite(.ownThreads) struct CSVReaderTests {
    static func records(_ text: String) throws(CSVSyntaxError) -> [CSVRecord] {
        try CSVReader.records(Array(text.utf8))
    }

    static func error(_ bytes: [UInt8]) -> CSVSyntaxError? {
        do {
            _ = try CSVReader.records(bytes)
            return nil
        } catch {
            return error
        }
    }

    static func error(_ text: String) -> CSVSyntaxError? {
        error(Array(text.utf8))
    }

    @Test func crlfAndLFFilesGiveTheSameRecords() throws {
        let lf = try Self.records("title,artist\nNevermind,Nirvana\n\"a, b\",\"c\"\"d\"\n")
        let crlf = try Self.records("title,artist\r\nNevermind,Nirvana\r\n\"a, b\",\"c\"\"d\"\r\n")
        let mixed = try Self.records("title,artist\r\nNevermind,Nirvana\n\"a, b\",\"c\"\"d\"")
        let classicMac = try Self.records("title,artist\rNevermind,Nirvana\r\"a, b\",\"c\"\"d\"\r")
        let expected = [
            CSVRecord(line: 1, fields: ["title", "artist"]),
            CSVRecord(line: 2, fields: ["Nevermind", "Nirvana"]),
            CSVRecord(line: 3, fields: ["a, b", "c\"d"]),
        ]
        #expect(lf == expected)
        #expect(crlf == expected)
        #expect(mixed == expected)
        #expect(classicMac == expected)
    }

    @Test func aByteOrderMarkAtTheStartIsSkipped() throws {
        let records = try CSVReader.records([0xEF, 0xBB, 0xBF] + Array("title,artist\r\nA,B\r\n".utf8))
        #expect(records == [CSVRecord(line: 1, fields: ["title", "artist"]), CSVRecord(line: 2, fields: ["A", "B"])])
        #expect(try CSVReader.records([0xEF, 0xBB, 0xBF]).isEmpty)
        // Only at the start: elsewhere it is text (U+FEFF).
        #expect(try CSVReader.records(Array("a\n".utf8) + [0xEF, 0xBB, 0xBF]).last?.fields == ["\u{FEFF}"])
    }

    @Test func lineBreaksInQuotedFieldsAreKeptAndCounted() throws {
        let records = try Self.records("a,\"one\ntwo\",b\r\n\"x\r\ny\r\n\nz\",\"\"\nlast,\"\"\"\"\n")
        #expect(records == [
            CSVRecord(line: 1, fields: ["a", "one\ntwo", "b"]),
            CSVRecord(line: 3, fields: ["x\r\ny\r\n\nz", ""]),
            CSVRecord(line: 7, fields: ["last", "\""]),
        ])
    }

    @Test func blankLinesAreRecordsOfOneEmptyFieldButNoneFollowsTheLastLineEnd() throws {
        #expect(try Self.records("").isEmpty)
        #expect(try Self.records("\n") == [CSVRecord(line: 1, fields: [""])])
        #expect(try Self.records("a\n\nb\n") == [
            CSVRecord(line: 1, fields: ["a"]), CSVRecord(line: 2, fields: [""]), CSVRecord(line: 3, fields: ["b"]),
        ])
        #expect(try Self.records("a,\n,") == [CSVRecord(line: 1, fields: ["a", ""]), CSVRecord(line: 2, fields: ["", ""])])
    }

    @Test func utf8TextIsReadWhole() throws {
        let records = try Self.records("Björk,坂本龍一,\"🎸, 🤘\",Виктор Цой\n")
        #expect(records.map(\.fields) == [["Björk", "坂本龍一", "🎸, 🤘", "Виктор Цой"]])
    }

    @Test func aQuoteInsideAnUnquotedFieldNamesItsLineAndCharacter() {
        #expect(Self.error("title,artist\nA,B\nx\"y,C\n") == CSVSyntaxError(.quoteInUnquotedField, line: 3, column: 2))
        // Characters, not bytes: "é" is two bytes.
        #expect(Self.error("é,b\"") == CSVSyntaxError(.quoteInUnquotedField, line: 1, column: 4))
    }

    @Test func textAfterAClosingQuoteNamesItsLineAndCharacter() {
        // The record on line 2 spans two lines, so the bad one is line 4.
        #expect(Self.error("a,b\n\"multi\nline\",c\n\"x\"y,d\n") == CSVSyntaxError(.textAfterClosingQuote, line: 4, column: 4))
        #expect(Self.error("a,\"one\ntwo\" ,b") == CSVSyntaxError(.textAfterClosingQuote, line: 2, column: 5))
    }

    @Test func anUnterminatedQuotedFieldNamesWhereItOpens() {
        #expect(Self.error("a,b\r\nc,\"open\r\nmore\r\n") == CSVSyntaxError(.unterminatedQuotedField, line: 2, column: 3))
        #expect(Self.error("\"") == CSVSyntaxError(.unterminatedQuotedField, line: 1, column: 1))
    }

    @Test func invalidUTF8NamesTheFirstBadByte() {
        #expect(Self.error(Array("a,b\nc,d".utf8) + [0xFF] + Array("\n".utf8)) == CSVSyntaxError(.invalidUTF8, line: 2, column: 4))
        #expect(Self.error(Array("x,\"ok\né".utf8) + [0xC3] + Array("\"\n".utf8)) == CSVSyntaxError(.invalidUTF8, line: 2, column: 2))
        #expect(Self.error(Array("\"a\"\"".utf8) + [0xC0, 0x80] + Array("\"".utf8)) == CSVSyntaxError(.invalidUTF8, line: 1, column: 5))
    }

    @Test func readingStopsAtTheFirstError() throws {
        var reader = CSVReader(Array("a\nb\"\nc\n".utf8))
        #expect(try reader.next()?.fields == ["a"])
        #expect(throws: CSVSyntaxError(.quoteInUnquotedField, line: 2, column: 2)) { try reader.next() }
        #expect(try reader.next() == nil)
    }

    @Test func errorsSayWhereAndWhatToDo() {
        let error = CSVSyntaxError(.quoteInUnquotedField, line: 3, column: 2)
        #expect(error.description.hasPrefix("line 3: a double quote at character 2"))
    }

    /// Linear time: 50 MB of export rows (quoted fields, doubled quotes and line breaks among
    /// them) are read in about a second even in a debug build.
    @Test(.timeLimit(.minutes(1)))
    func fiftyMegabytesAreReadInLinearTime() throws {
        var row: [UInt8] = []
        AlbumCSV.appendRow(
            id: "0f8fad5b-d9cb-469f-a165-70867728950e", index: 12345, title: "Songs, \"Live\"\nat Budokan", artist: "Cheap Trick",
            genre: "Rock", year: 1978, coverUrl: "https://example.com/covers/cheap-trick.png",
            createdAt: "2024-05-01T12:34:56.789Z", updatedAt: "2024-05-01T12:34:56.789Z", to: &row)
        let rows = 50_000_000 / row.count
        var bytes: [UInt8] = []
        bytes.reserveCapacity(rows * row.count)
        for _ in 0..<rows { bytes.append(contentsOf: row) }
        var reader = CSVReader(bytes)
        var count = 0
        var lastLine = 0
        while let record = try reader.next() {
            count += 1
            lastLine = record.line
        }
        #expect(count == rows)
        #expect(lastLine == 2 * rows - 1)
    }
}
