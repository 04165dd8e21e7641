import Essentials
import Foundation
import AlbumStoreContract
import HTTPTestSupport
import TestThreads
import Testing
@testable import BlueLibraryAPI
@testable import Library

/// Text pieces that stress escaping and UTF-8: quotes, backslashes, control characters,
/// combining marks, astral-plane characters, right-to-left text, invisible characters.
private let oddPieces = [
    "a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\r", "\u{1}", "\u{1F}", "\u{7F}", "é", "e\u{301}", "ß", "☃", "😀",
    "👩‍👩‍👧", "🇳🇴", "𝄞", "日本語", "שלום", "مرحبا", "\u{200B}", "\u{FEFF}", "\u{2028}", "\u{A0}", "\u{10FFFF}", "<b>&amp;</b>",
    "{\"json\": [1, 2]}", "\\u0041",
]

private func oddText(_ random: inout SeededGenerator) -> String {
    var text = ""
    for _ in 0..<Int.random(in: 1...12, using: &random) {
        text += oddPieces.randomElement(using: &random)!
    }
    // Keep the text valid as it is: the rules trim it, and the round trip should not.
    return "[" + text + "]"
}

/// The document with every non-ASCII character written as a `\u` escape (surrogate pairs for
/// the astral plane): the same JSON value, spelled the other way.
private func asciiOnly(_ bytes: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    for scalar in String(decoding: bytes, as: UTF8.self).unicodeScalars {
        if scalar.isASCII {
            out.append(UInt8(scalar.value))
            continue
        }
        for unit in String(scalar).utf16 {
            out.append(contentsOf: Array(String(format: "\\u%04X", unit).utf8))
        }
    }
    return out
}

@Suite("Archive parsing", .ownThreads)
struct ArchiveParsingTests {
    @Test("random albums with odd text round trip through export and parse", arguments: [1, 2, 3, 4])
    func randomRoundTrip(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let fixture = try Fixture()
        for _ in 0..<60 {
            let input = try AlbumInput(
                title: oddText(&random), artist: oddText(&random),
                genre: Bool.random(using: &random) ? oddText(&random) : nil,
                year: Bool.random(using: &random) ? Int.random(in: 1000...9999, using: &random) : nil,
                coverUrl: Bool.random(using: &random) ? "https://example.com/c/\(random.next()).png?q=%C3%A9#x" : nil)
            let count = try fixture.facade.count()
            _ = try fixture.facade.add(input, at: Int.random(in: 0...count, using: &random))
            fixture.clock.advance(milliseconds: Int64.random(in: 1...100_000, using: &random))
        }
        try fixture.facade.setState(client: "phone", index: 7)
        let albums = try fixture.facade.page(PageRequest(limit: 500)).items.map(\.album)
        let states = fixture.store.data().states.values.sorted { $0.client < $1.client }
        var bytes: [UInt8] = []
        try fixture.facade.exportArchive(chunkSize: 97) { bytes += $0 }

        for spelling in [bytes, asciiOnly(bytes)] {
            let document = try ArchiveDocument.parse(json: spelling)
            #expect(document.albums == albums)
            #expect(document.states.sorted { $0.client < $1.client } == states)
            #expect(document.states.first { $0.client == "phone" }?.albumID == albums[7].id)
            #expect(document.version == (try fixture.facade.version()))
        }
        // And the escaped spelling really uses surrogate pairs.
        #expect(String(decoding: asciiOnly(bytes), as: UTF8.self).contains("\\uD83D\\uDE00"))
    }

    @Test("Album.appendJSON output parses back to the same album, one by one")
    func appendJSONRoundTrip() throws {
        var random = SeededGenerator(seed: 99)
        var albums: [Album] = []
        for index in 0..<300 {
            let input = try AlbumInput(title: oddText(&random), artist: oddText(&random), genre: oddText(&random))
            // Dates whose text form reads back exactly (`Timestamp` rounds some instants, mostly
            // before 1970, down by a millisecond: its own limit, not the parser's).
            var created: Int64
            repeat {
                created = Int64.random(in: -62_135_596_800_000...253_402_300_799_000, using: &random)
            } while !([created, created + Int64(index)].allSatisfy {
                Timestamp.parse(Timestamp.format(Timestamp.date(milliseconds: $0))) == Timestamp.date(milliseconds: $0)
            })
            var album = Album(
                id: AlbumID(high: UInt64(index) << 20 | random.next() & 0xFFFFF, low: random.next()), input: input,
                createdAt: Timestamp.date(milliseconds: created))
            album.updatedAt = Timestamp.date(milliseconds: created + Int64(index))
            album.year = index % 3 == 0 ? nil : 1000 + index
            albums.append(album)
        }
        var bytes = Array(#"{"format":"bluelibrary.archive","formatVersion":1,"albums":["#.utf8)
        for (index, album) in albums.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            album.appendJSON(to: &bytes)
        }
        bytes += Array("]}".utf8)
        let parsed = try ArchiveDocument.parse(json: bytes).albums
        #expect(parsed.count == albums.count)
        for (album, expected) in zip(parsed, albums) where album != expected {
            Issue.record("\(album) != \(expected)")
        }
    }

    @Test("syntax errors are malformed, with where and what")
    func syntaxErrors() throws {
        let cases: [(String, String)] = [
            ("{\"format\":", "the archive is not valid JSON (unexpected end of input; expected a value at line 1, column 11 (byte offset 10)); check quotes, commas and brackets"),
            ("{\"format\": \"bluelibrary.archive\",\n \"albums\": [{\"id\": 01}]}", "a number must not have a leading zero at line 2, column 20"),
            ("{\"albums\": []} trailing", "unexpected 't' after the end of the document at line 1, column 16"),
        ]
        for (json, expected) in cases {
            guard case .malformed(let message)? = libraryError({ _ = try ArchiveDocument.parse(json: bytes(json)) }) else {
                Issue.record("expected malformed for \(json)")
                continue
            }
            #expect(message.contains(expected), "\(message)")
        }
        // Syntax is checked before anything else, even past the problem limit.
        let bad = (0..<150).map { _ in #"{"title": 5}"# }.joined(separator: ",")
        let error = libraryError { _ = try ArchiveDocument.parse(json: bytes(#"{"format":"x","albums":["# + bad + ",]}")) }
        guard case .malformed? = error else {
            Issue.record("expected malformed, got \(String(describing: error))")
            return
        }
    }

    @Test("empty and non-object documents are malformed", arguments: [
        ("", "the archive is empty; send a JSON object"), (" \n", "the archive is empty; send a JSON object"),
        ("[]", "the archive must be a JSON object like {\"format\": \"bluelibrary.archive\", \"formatVersion\": 1, \"albums\": []}, not an array"),
        ("\"x\"", "not a string"), ("7", "not a number"), ("null", "not null"),
    ])
    func notAnObject(json: String, message: String) {
        guard case .malformed(let text)? = libraryError({ _ = try ArchiveDocument.parse(json: bytes(json)) }) else {
            Issue.record("expected malformed")
            return
        }
        #expect(text.hasSuffix(message))
    }

    @Test("keys may come in any order; states may name albums listed after them")
    func anyOrder() throws {
        let id = "01HZY8Q6V9T3X2K7M4N5P6R7S8"
        let json = #"{"states":[{"client":"tv","currentAlbumIndex":0,"albumID":"\#(id)","updatedAt":null}],"#
            + #""albums":[{"updatedAt":"2024-01-01T00:00:00.000Z","createdAt":"2024-01-01T00:00:00.000Z","title":"T","artist":"A","id":"\#(id)"}],"#
            + #""version":3,"formatVersion":1.0,"format":"bluelibrary.archive"}"#
        let document = try ArchiveDocument.parse(json: bytes(json))
        #expect(document.albums.map(\.id.rawValue) == [id])
        #expect(document.albums.first?.genre == "Pop")
        #expect(document.states.first?.albumID?.rawValue == id)
        #expect(document.version == 3)
    }

    @Test("a bad header hides every other problem, wherever it is in the document")
    func headerLast() throws {
        let json = #"{"albums":[{"title":5}],"bogus":1,"format":"bluelibrary.archive","formatVersion":2}"#
        guard case .archiveInvalid(let problems)? = libraryError({ _ = try ArchiveDocument.parse(json: bytes(json)) }) else {
            Issue.record("expected archiveInvalid")
            return
        }
        #expect(problems.map(\.path) == ["formatVersion"])
    }

    @Test("field values of the wrong kind are named; booleans are not numbers")
    func wrongKinds() throws {
        let json = #"{"format":"bluelibrary.archive","formatVersion":1,"version":true,"library":[],"exportedAt":{},"#
            + #""albums":[{"id":"01HZY8Q6V9T3X2K7M4N5P6R7S8","title":["T"],"artist":{"a":1},"year":true,"coverUrl":"ftp://x/y","#
            + #""createdAt":1,"updatedAt":null,"extra":1}, 5, null],"states":{}}"#
        guard case .archiveInvalid(let problems)? = libraryError({ _ = try ArchiveDocument.parse(json: bytes(json)) }) else {
            Issue.record("expected archiveInvalid")
            return
        }
        #expect(problems.map(\.message) == [
            "exportedAt must be an RFC 3339 timestamp like \"2024-05-01T12:00:00.000Z\" (got an object)",
            "library must be a string, not an array",
            "version must be a whole number from 0 to 8999999999999999 (got a boolean)",
            "albums[0].extra is not a known field Known fields: id, title, artist, genre, year, coverUrl, createdAt, updatedAt",
            "albums[0].title must be a string, not an array",
            "albums[0].artist must be a string, not an object",
            "albums[0].year " + AlbumFieldRules.yearMessage + " (got a boolean)",
            "albums[0].coverUrl " + AlbumFieldRules.coverURLMessage + " (got \"ftp://x/y\")",
            "albums[0].createdAt must be an RFC 3339 timestamp like \"2024-05-01T12:00:00.000Z\" (got a number)",
            "albums[0].updatedAt is required: an RFC 3339 timestamp like \"2024-05-01T12:00:00.000Z\"",
            "albums[1] must be an object (got a number)",
            "albums[2] must be an object (got null)",
            "states must be an array of saved states (got an object)",
        ])
        #expect(problems[3].albumIndex == 0 && problems[3].field == "extra")
        #expect(problems[10].albumIndex == 1 && problems[10].field == nil)
    }

    @Test("albums must be an array", arguments: [
        (#""albums":{}"#, "albums must be an array of albums (got an object)"),
        (#""albums":null"#, "albums must be an array of albums (got null)"),
        (#""x":1"#, "albums must be an array of albums (got nothing)"),
    ])
    func albumsNotAnArray(member: String, message: String) throws {
        let json = #"{"format":"bluelibrary.archive","formatVersion":1,"# + member + "}"
        guard case .archiveInvalid(let problems)? = libraryError({ _ = try ArchiveDocument.parse(json: bytes(json)) }) else {
            Issue.record("expected archiveInvalid")
            return
        }
        #expect(problems.last?.message == message)
        #expect(problems.last?.field == "albums")
    }

    @Test("a repeated key counts once, with its last value")
    func repeatedKeys() throws {
        let album = #"{"id":"01HZY8Q6V9T3X2K7M4N5P6R7S8","title":"First","title":"Second","artist":"A","createdAt":"2024-01-01T00:00:00Z","updatedAt":"2024-01-01T00:00:00Z"}"#
        let json = #"{"format":"bluelibrary.archive","formatVersion":1,"albums":[{"title":5}],"albums":["# + album + "]}"
        let document = try ArchiveDocument.parse(json: bytes(json))
        #expect(document.albums.map(\.title) == ["Second"])
    }

    func problems(_ json: [UInt8]) -> [ArchiveProblem] {
        guard case .archiveInvalid(let problems)? = libraryError({ _ = try ArchiveDocument.parse(json: json) }) else {
            Issue.record("expected archiveInvalid")
            return []
        }
        return problems
    }

    func archive(states: String, extra: String = "") -> [UInt8] {
        bytes(#"{"format":"bluelibrary.archive","formatVersion":1"# + extra + #","albums":[],"states":["# + states + "]}")
    }

    /// A body of `[0,0,...]` or of many small states must not be kept whole in memory.
    @Test("states are bounded: 10,000 are kept, one more refuses the archive as a whole")
    func stateLimit() throws {
        let states = (0..<ArchiveDocument.maximumStates).map { #"{"client":"c\#($0)","currentAlbumIndex":0}"# }
        #expect(try ArchiveDocument.parse(json: archive(states: states.joined(separator: ","))).states.count == 10_000)
        let tooMany = problems(archive(states: (states + [#"{"client":"last","currentAlbumIndex":0}"#]).joined(separator: ",")))
        #expect(tooMany.map(\.path) == ["states"])
        #expect(tooMany.first?.message.contains("more than 10000") == true, "\(tooMany)")
    }

    @Test("a states array of a million numbers is one problem, its elements are never kept")
    func stateShapes() throws {
        let zeros = String(repeating: "0,", count: 1_000_000) + "0"
        let found = problems(archive(states: zeros))
        #expect(found.map(\.path) == ["states"], "\(found.prefix(3))")
    }

    @Test("an object with more than 64 members is refused without keeping them")
    func memberLimit() throws {
        let members = (0...ArchiveDocument.maximumMembersPerObject).map { #""k\#($0)":0"# }.joined(separator: ",")
        let album = bytes(#"{"format":"bluelibrary.archive","formatVersion":1,"albums":[{"#  + members + "}]}")
        #expect(problems(album).map(\.path) == ["albums[0]"])
        #expect(problems(archive(states: "{" + members + "}")).map(\.path) == ["states[0]"])
        #expect(problems(archive(states: "", extra: "," + members)).contains { $0.path == "archive" })
    }

    @Test("problems stop at the limit, with the top-level ones first")
    func problemLimit() throws {
        let bad = (0..<300).map { _ in #"{"title": 5}"# }.joined(separator: ",")
        let json = #"{"format":"bluelibrary.archive","formatVersion":1,"albums":["# + bad + #"],"zzz":1}"#
        guard case .archiveInvalid(let problems)? = libraryError({ _ = try ArchiveDocument.parse(json: bytes(json)) }) else {
            Issue.record("expected archiveInvalid")
            return
        }
        #expect(problems.count == ArchiveDocument.maximumReportedProblems)
        #expect(problems.first?.path == "zzz")
        #expect(problems[1].path == "albums[0].id")
    }

    @Test("the cover URL shortcut only accepts what URL accepts", arguments: [
        "https://s3.amazonaws.com/CoverProject/album/album_1.png", "http://a", "http://a/", "https://x.y.z/-._~!$&'()*+,;=:@/",
        "http://a..b/", "http://a-/x", "http://0/x", "https://example.com//double//slash", "http://a.b/é",
        "http://a b/", "http://a/b c", "http://a/%41", "http://a/%zz", "http://a:80/", "http://user@a/", "http://[::1]/",
        "HTTP://a/", "http:///x", "http://", "https://.x/", "http://a/?q", "http://a/#f", "http://a/\\", "http://a/|",
        "ftp://a/", "file:///etc/passwd", "https:/a", "", "http://a/\"", "http://a/<x>",
    ])
    func coverURLShortcut(text: String) {
        if AlbumFieldRules.isPlainWebURL(text) {
            #expect(AlbumFieldRules.isWebURL(text), "shortcut accepted \(text), URL does not")
        }
    }

    @Test("the text shortcut trims exactly like Foundation")
    func trimmingShortcut() {
        var samples = ["a", " a", "a ", "\u{A0}a", "a\u{2028}", "\u{85}x", "\u{FEFF}x", "x\u{200B}", "\u{3000}y\u{3000}", "", " ", "\t\n"]
        for value in 0..<0x80 {
            let scalar = String(UnicodeScalar(UInt8(value)))
            samples += [scalar, scalar + "x", "x" + scalar]
        }
        for sample in samples {
            #expect(AlbumFieldRules.trimmed(sample) == sample.trimmingCharacters(in: .whitespacesAndNewlines), "\(Array(sample.unicodeScalars))")
        }
    }
}
