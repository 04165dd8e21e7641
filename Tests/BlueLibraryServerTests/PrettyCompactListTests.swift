import Foundation
import Library
import TestThreads
import Testing

@testable import BlueLibraryServer

/// `?pretty` list and album bodies are the compact ones (the hand-written byte encoder on the
/// hot path) re-indented. This pins that the two always say the same thing: for awkward text
/// (quotes, backslashes, control characters, slashes, non-ASCII, U+2028), missing optionals,
/// pages with and without indexes, totals and cursors, both bodies parse to equal JSON values,
/// and the pretty one is indented.
@Suite(.ownThreads) struct PrettyCompactListTests {
    static let awkward = [
        "", "plain", "quote \" and \\ backslash", "line\nbreak\r\ttab", "\u{0}\u{1}\u{1F}\u{7F}",
        "a/b</script>", "é ü 日本 😀", "\u{2028}\u{2029}", "\u{FEFF}bom",
    ]

    static func album(_ number: Int, text: String, year: Int?, cover: String?) -> Album {
        Album(
            id: AlbumID("01HZY8Q6V9T3X2K7M4N5P6R7S\(number % 10)")!, title: "T " + text, artist: text + " A",
            genre: text, year: year, coverUrl: cover,
            createdAt: Date(timeIntervalSince1970: 1_700_000_000.123 + Double(number)),
            updatedAt: Date(timeIntervalSince1970: -1.5 + Double(number)))
    }

    static func parsed(_ bytes: [UInt8]) throws -> NSObject {
        #expect(bytes.last == 0x0A, "bodies end with a newline")
        return try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) as! NSObject
    }

    @Test(arguments: [false, true])
    func listPagesSayTheSameInBothForms(withIndexes: Bool) throws {
        var items: [ListedAlbum] = []
        for (number, text) in Self.awkward.enumerated() {
            let album = Self.album(
                number, text: text, year: number.isMultiple(of: 2) ? nil : 1960 + number,
                cover: number.isMultiple(of: 3) ? nil : "https://example.com/\(text)")
            items.append(ListedAlbum(album: album, index: withIndexes ? number * 7 : nil))
        }
        for (next, total) in [(nil, nil), ("c\"ursor/", 42)] as [(String?, Int?)] {
            let page = AlbumListPage(items: items, next: nil, version: 9, total: total)
            let compact = try AlbumRepresentation.listBytes(page, next: next, pretty: false)
            let pretty = try AlbumRepresentation.listBytes(page, next: next, pretty: true)
            #expect(compact != pretty)
            #expect(String(decoding: pretty, as: UTF8.self).hasPrefix("{\n  \"items\" : ["))
            #expect(try Self.parsed(compact) == Self.parsed(pretty))
        }
        let empty = AlbumListPage(items: [], next: nil, version: 0, total: 0)
        #expect(try Self.parsed(AlbumRepresentation.listBytes(empty, next: nil, pretty: false))
            == Self.parsed(AlbumRepresentation.listBytes(empty, next: nil, pretty: true)))
    }

    @Test func singleAlbumsSayTheSameInBothForms() throws {
        for (number, text) in Self.awkward.enumerated() {
            let item = IndexedAlbum(album: Self.album(number, text: text, year: nil, cover: text), index: number)
            #expect(try Self.parsed(AlbumRepresentation.bytes(item, pretty: false))
                == Self.parsed(AlbumRepresentation.bytes(item, pretty: true)))
        }
    }
}
