import TestThreads
import Testing
@testable import BlueLibraryAPI
@testable import Library

/// U+0000 is refused in album text, list filters and catalog names (PostgreSQL cannot store it;
/// both stores answer alike), with the field named.
@Suite(.ownThreads) struct NulTextValidationTests {
    @Test func albumTextFields() throws {
        for (title, artist, genre, field) in [("a\u{0}b", "A", "G", "title"), ("T", "\u{0}", "G", "artist"), ("T", "A", "G\u{0}", "genre")] {
            do {
                _ = try AlbumInput(title: title, artist: artist, genre: genre)
                Issue.record("\(field) with NUL was accepted")
            } catch {
                #expect(error.errors.map(\.field) == [field])
                #expect(error.errors.first?.message.contains("U+0000") == true)
            }
        }
        #expect(throws: (any Error).self) { _ = try AlbumInput(title: "T", artist: "A", coverUrl: "https://x.example/\u{0}.png") }
        #expect(throws: (any Error).self) { _ = try AlbumPatch.decode(json: Array(#"{"title":"x\u0000"}"#.utf8)) }
    }

    @Test func listFilters() throws {
        for (filter, field) in [(AlbumFilter(text: "\u{0}"), "q"), (AlbumFilter(artist: "x\u{0}"), "artist"), (AlbumFilter(genre: "\u{0}y"), "genre")] {
            #expect(throws: LibraryError.invalid(ValidationFailure([FieldError(field: field, message: "\(field) must not contain the NUL character (U+0000)")]))) {
                _ = try filter.validated()
            }
        }
        #expect(try AlbumFilter(text: "ok").validated() == AlbumFilter(text: "ok"))
    }

    @Test func catalogNames() throws {
        #expect(throws: LibraryError.self) { _ = try CatalogName.validatedName("Jazz\u{0}") }
    }
}
