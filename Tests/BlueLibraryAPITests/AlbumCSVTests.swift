import BlueLibraryAPI
import TestThreads
import Testing

/// Albums to CSV rows and back: the export's header and cells, the import's column mapping,
/// Discogs's collection export, and every problem named by line and column.
@Suite(.ownThreads) struct AlbumCSVTests {
    static func imported(_ text: String) throws(CSVImportFailure) -> AlbumCSVImport {
        try AlbumCSV.importAlbums(from: Array(text.utf8))
    }

    static func failure(_ text: String) -> CSVImportFailure? {
        do {
            _ = try imported(text)
            return nil
        } catch {
            return error
        }
    }

    static func album(_ title: String, _ artist: String, genre: String? = nil, year: Int? = nil, coverUrl: String? = nil) throws -> AlbumInput {
        try AlbumInput(title: title, artist: artist, genre: genre, year: year, coverUrl: coverUrl)
    }

    // MARK: Export

    @Test func theHeaderAndARowAreTheAlbumsFieldsInOrder() {
        var bytes: [UInt8] = []
        AlbumCSV.appendHeader(to: &bytes)
        AlbumCSV.appendRow(
            AlbumResource(
                id: "a1", title: "Déjà Vu", artist: "Crosby, Stills, Nash & Young", genre: "Rock", year: 1970,
                coverUrl: "https://example.com/dv.png", createdAt: "2024-05-01T12:34:56.789Z",
                updatedAt: "2024-05-02T00:00:00.000Z", index: 0),
            to: &bytes)
        AlbumCSV.appendRow(
            AlbumResource(id: "a2", title: "=1+1", artist: "-", createdAt: "2024-05-01T12:34:56.789Z", updatedAt: "2024-05-01T12:34:56.789Z"),
            to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == """
            id,index,title,artist,genre,year,coverUrl,createdAt,updatedAt\r
            a1,0,Déjà Vu,"Crosby, Stills, Nash & Young",Rock,1970,https://example.com/dv.png,2024-05-01T12:34:56.789Z,2024-05-02T00:00:00.000Z\r
            a2,,'=1+1,'-,Pop,,,2024-05-01T12:34:56.789Z,2024-05-01T12:34:56.789Z\r

            """)
    }

    @Test func datesGivenAsMillisecondsAreWrittenAsTimestamps() {
        var fromText: [UInt8] = []
        var fromMilliseconds: [UInt8] = []
        AlbumCSV.appendRow(
            id: "a", index: 3, title: "T", artist: "A", genre: "Pop", year: nil, coverUrl: nil,
            createdAt: "2023-11-14T22:13:20.123Z", updatedAt: "1970-01-01T00:00:00.000Z", to: &fromText)
        AlbumCSV.appendRow(
            id: "a", index: 3, title: "T", artist: "A", genre: "Pop", year: nil, coverUrl: nil,
            createdAtMilliseconds: 1_700_000_000_123, updatedAtMilliseconds: 0, to: &fromMilliseconds)
        #expect(fromMilliseconds == fromText)
    }

    @Test func anExportImportsAsTheSameAlbumsIgnoringTheServersColumns() throws {
        let albums = [
            try Self.album("Nevermind", "Nirvana", genre: "Grunge", year: 1991, coverUrl: "https://example.com/n.png"),
            try Self.album("Say \"Hi\", Again\nPart 2", "Björk & 坂本龍一 🎹"),
            try Self.album("Nirvana (2)", "Foo (2)", year: 1000),
        ]
        var bytes: [UInt8] = []
        AlbumCSV.appendHeader(to: &bytes)
        for (index, album) in albums.enumerated() {
            AlbumCSV.appendRow(
                id: "id-\(index)", index: index, title: album.title, artist: album.artist, genre: album.genre, year: album.year,
                coverUrl: album.coverUrl, createdAt: "2024-05-01T12:34:56.789Z", updatedAt: "2024-05-01T12:34:56.789Z", to: &bytes)
        }
        let result = try AlbumCSV.importAlbums(from: bytes)
        #expect(result.albums == albums)
        #expect(result.ignoredColumns == ["id", "index", "createdAt", "updatedAt"])
    }

    // MARK: Header

    @Test func columnsAreMatchedWithoutRegardToCaseOrWhitespaceInAnyOrder() throws {
        let result = try Self.imported("""
            \u{20}YEAR ,Cover_URL,  Genre,ARTIST,Title\t,Notes
            1977,https://example.com/r.png,Rock,Fleetwood Mac,Rumours,great
            """)
        #expect(result.albums == [try Self.album("Rumours", "Fleetwood Mac", genre: "Rock", year: 1977, coverUrl: "https://example.com/r.png")])
        #expect(result.ignoredColumns == ["Notes"])
        #expect(try Self.imported("Cover URL,title,artist\nhttps://e.com/c.png,T,A").albums == [try Self.album("T", "A", coverUrl: "https://e.com/c.png")])
        #expect(try Self.imported("coverUrl,title,artist\nhttps://e.com/c.png,T,A").albums == [try Self.album("T", "A", coverUrl: "https://e.com/c.png")])
        // Excel's "CSV UTF-8" starts with a byte order mark.
        let excel = try AlbumCSV.importAlbums(from: [0xEF, 0xBB, 0xBF] + Array("Title,Artist\r\nHomogenic,Björk\r\n".utf8))
        #expect(excel.albums == [try Self.album("Homogenic", "Björk")])
        #expect(excel.ignoredColumns.isEmpty)
    }

    @Test func ignoredColumnsAreReportedInHeaderOrder() throws {
        let result = try Self.imported("ID,title,Rating,artist,createdAt,,updatedAt,index\nx,T,5,A,y,z,w,3\n")
        #expect(result.ignoredColumns == ["ID", "Rating", "createdAt", "", "updatedAt", "index"])
        #expect(result.albums == [try Self.album("T", "A")])
    }

    @Test func missingTitleAndArtistColumnsAreOneErrorOnTheHeadersLine() {
        #expect(Self.failure("name,band\nA,B\n")?.errors == [CSVImportError(
            line: 1, column: nil,
            message: "the header row has no \"title\" and \"artist\" columns; the first line must name the columns, with title and artist among them")])
        #expect(Self.failure("\n\nTitle,Genre\nA,B\n")?.errors.map(\.line) == [3])
        #expect(Self.failure("\n\nTitle,Genre\nA,B\n")?.errors.first?.message.hasPrefix("the header row has no \"artist\" column;") == true)
        #expect(Self.failure("")?.errors.map(\.line) == [1])
    }

    @Test func twoColumnsForOneFieldAreRefused() {
        #expect(Self.failure("title,artist,Year,Released\nA,B,1977,1977\n")?.errors == [CSVImportError(
            line: 1, column: "Released", message: "the columns \"Year\" and \"Released\" both give the year; keep one")])
    }

    // MARK: Rows

    @Test func aTooLongTitleNamesItsLineAndColumn() {
        let title = String(repeating: "x", count: 501)
        let failure = Self.failure("Artist,Title,Year\nA,Fine,1990\r\nB,\(title),1991\n")
        #expect(failure?.errors == [CSVImportError(line: 3, column: "Title", message: "Title must be at most 500 characters (got 501)")])
        #expect(failure?.hasMoreErrors == false)
    }

    @Test func everyBadCellOfEveryRowIsReportedInOrder() {
        let failure = Self.failure("""
            title,artist,year,coverUrl
            ,Someone,1990,
            "multi
            line",  ,92,ftp://example.com/c.png
            Fine,Fine,1990,
            """)
        #expect(failure?.errors == [
            CSVImportError(line: 2, column: "title", message: "title must not be empty or only whitespace"),
            CSVImportError(line: 3, column: "artist", message: "artist must not be empty or only whitespace"),
            CSVImportError(line: 3, column: "year", message: "year " + "must be a year like 1992 or a date that starts with one like 1992-05-13, or empty (got \"92\")"),
            CSVImportError(
                line: 3, column: "coverUrl",
                message: "coverUrl " + AlbumFieldRules.coverURLMessage + " (got \"ftp://example.com/c.png\")"),
        ])
    }

    @Test func shortRowsHaveEmptyCellsAndRowsWithExtraCellsAreRefused() throws {
        #expect(try Self.imported("title,artist,genre,year\nT,A\nU,B,Jazz\n").albums == [try Self.album("T", "A"), try Self.album("U", "B", genre: "Jazz")])
        // Trailing empty cells (spreadsheet padding) are no extra cells.
        #expect(try Self.imported("title,artist\nT,A,,\n").albums == [try Self.album("T", "A")])
        #expect(Self.failure("title,artist\nT,A\nCrosby, Stills & Nash,Déjà Vu\n")?.errors == [CSVImportError(
            line: 3, column: nil,
            message: "the row has 3 cells but the header has 2 columns; enclose a cell that holds a comma in double quotes")])
    }

    @Test func emptyRowsAreSkipped() throws {
        let result = try Self.imported("title,artist\r\n\r\n,\r\nT,A\r\n , \r\n\r\n\r\n")
        #expect(result.albums == [try Self.album("T", "A")])
    }

    @Test func blankOptionalCellsAreNotGiven() throws {
        #expect(try Self.imported("title,artist,genre,year,coverUrl\nT,A, ,  ,\n").albums == [try Self.album("T", "A")])
    }

    @Test func aSyntaxErrorIsReportedAfterTheRowErrorsBeforeIt() {
        #expect(Self.failure("title,artist\n,A\nB,\"C\"x\nD,E\n")?.errors == [
            CSVImportError(line: 2, column: "title", message: "title must not be empty or only whitespace"),
            CSVImportError(CSVSyntaxError(.textAfterClosingQuote, line: 3, column: 6)),
        ])
    }

    @Test func errorsAreCappedAndSayThereAreMore() {
        let rows = String(repeating: ",A\n", count: 150)
        let failure = Self.failure("title,artist\n" + rows)
        #expect(failure?.errors.count == AlbumCSV.maximumImportErrors)
        #expect(failure?.errors.last?.line == AlbumCSV.maximumImportErrors + 1)
        #expect(failure?.hasMoreErrors == true)
        let exactly = Self.failure("title,artist\n" + String(repeating: ",A\n", count: AlbumCSV.maximumImportErrors) + "T,A\n")
        #expect(exactly?.errors.count == AlbumCSV.maximumImportErrors)
        #expect(exactly?.hasMoreErrors == false)
    }

    // MARK: Discogs

    /// A collection export as Discogs writes it (columns after `Date Added` vary by account).
    static let discogs = """
        Catalog#,Artist,Title,Label,Format,Rating,Released,release_id,CollectionFolder,Date Added,Collection Media Condition,Collection Sleeve Condition,Collection Notes
        DGC-24425,Nirvana (2),Nevermind,DGC,"LP, Album, RE, 180",5,1991-09-24,367084,Uncategorized,2023-01-15 10:22:31,Near Mint (NM or M-),Very Good Plus (VG+),
        V 2086,Sex Pistols,Never Mind The Bollocks Here's The Sex Pistols,Virgin,"LP, Album",,1977,1228282,Uncategorized,2023-02-01 18:05:10,,,"Gatefold, ""A&M"" insert"
        none,Various,Unknown Tapes,Not On Label,"Cass, Comp",,0,999001,Uncategorized,2023-03-03 09:00:00,,,
        SD 19117,"Crosby, Stills, Nash & Young",Déjà Vu,Atlantic,"LP, Album",4,,12345,Uncategorized,2023-04-04 12:00:00,,,
        ORG 001,Sunn O))),Monoliths & Dimensions (12),Southern Lord,"2xLP, Album",,1977-00-00,1700000,Uncategorized,2023-05-05 08:00:00,,,

        """

    @Test func aDiscogsCollectionExportImports() throws {
        let result = try Self.imported(Self.discogs)
        #expect(result.albums == [
            try Self.album("Nevermind", "Nirvana", year: 1991),
            try Self.album("Never Mind The Bollocks Here's The Sex Pistols", "Sex Pistols", year: 1977),
            try Self.album("Unknown Tapes", "Various"),
            try Self.album("Déjà Vu", "Crosby, Stills, Nash & Young"),
            try Self.album("Monoliths & Dimensions (12)", "Sunn O)))", year: 1977),
        ])
        #expect(result.ignoredColumns == [
            "Catalog#", "Label", "Format", "Rating", "release_id", "CollectionFolder", "Date Added",
            "Collection Media Condition", "Collection Sleeve Condition", "Collection Notes",
        ])
    }

    @Test(arguments: [
        ("1977", 1977), ("1977-05-13", 1977), ("1977-00-00", 1977), ("  2001 ", 2001), ("", nil), ("0", nil), ("Unknown", nil),
        ("unknown", nil), ("9999", 9999), ("1000-01", 1000),
    ] as [(String, Int?)])
    func discogsReleaseDatesGiveTheirYear(_ released: String, _ year: Int?) throws {
        let result = try Self.imported("Artist,Title,Released,release_id\nA,T,\(released),1\n")
        #expect(result.albums == [try Self.album("T", "A", year: year)])
        // A `year` column is read alike.
        #expect(try Self.imported("artist,title,year\nA,T,\(released)\n").albums == [try Self.album("T", "A", year: year)])
    }

    @Test(arguments: ["92", "0999", "19770", "1977/05/13", "May 1977", "00", "0000-00-00", "n/a", "-1977"])
    func otherReleaseValuesAreAnErrorOfTheirCell(_ released: String) {
        #expect(Self.failure("Artist,Title,Released,release_id\nA,T,\(released),1\n")?.errors == [CSVImportError(
            line: 2, column: "Released",
            message: "Released must be a year like 1992 or a date that starts with one like 1992-05-13, or empty (got \"\(released)\")")])
    }

    @Test func onlyDiscogsFilesLoseTheArtistsNumber() throws {
        let artists = ["Nirvana (2)": "Nirvana", "The Band (12) ": "The Band", "(2)": "(2)", "Area (51x)": "Area (51x)", "X(2)": "X(2)",
                       "Sunn O)))": "Sunn O)))", "A (2) (3)": "A (2)"]
        for (written, expected) in artists {
            let row = "\"\(written)\",T,1\n"
            #expect(try Self.imported("Artist,Title,release_id\n" + row).albums.first?.artist == expected, "\(written)")
            #expect(try Self.imported("Artist,Title,id\n" + row).albums.first?.artist == AlbumFieldRules.trimmed(written))
        }
    }
}
