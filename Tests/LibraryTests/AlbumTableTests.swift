import Foundation
import TestThreads
import Testing
@testable import Library

@Suite("Table representation (decorator)", .ownThreads)
struct AlbumTableTests {
    @Test("Best of Bowie as table rows, exactly")
    func bestOfBowie() throws {
        // Given the first seed album
        let album = Album(id: AlbumID("01HZY8Q6V9T3X2K7M4N5P6R7S8")!, input: SeedAlbums.inputs[0], createdAt: Date(timeIntervalSince1970: 0))
        // When shown as a table and encoded
        let table = album.tableRepresentation
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(table), as: UTF8.self)
        // Then the rows are artist, album, genre, year
        #expect(json == #"{"titles":["Artist","Album","Genre","Year"],"values":["David Bowie","Best of Bowie","Pop","1992"]}"#)
    }

    @Test("an absent year is an empty string, keeping four values")
    func noYear() {
        let album = Album(id: AlbumID("01HZY8Q6V9T3X2K7M4N5P6R7S8")!, title: "T", artist: "A", createdAt: .distantPast, updatedAt: .distantPast)
        #expect(album.tableRepresentation.values == ["A", "T", "Pop", ""])
    }
}
