import AlbumStoreContract
import TestThreads
import Testing
@testable import BlueLibraryAPI
@testable import Library

@Suite("JSON merge patch (RFC 7396)", .ownThreads)
struct AlbumPatchTests {
    let current = try! AlbumInput(title: "Best of Bowie", artist: "David Bowie", genre: "Rock", year: 1992, coverUrl: "https://e.com/a.png")

    @Test("present keys replace, absent keys keep")
    func replaceAndKeep() throws {
        // Given a patch naming only year (as a string) and title
        let patch = try AlbumPatch.decode(json: bytes(#"{"year": "1993", "title": " New "}"#))
        // When applied
        let result = try patch.applied(to: current)
        // Then only those change
        #expect(result == (try AlbumInput(title: "New", artist: "David Bowie", genre: "Rock", year: 1993, coverUrl: "https://e.com/a.png")))
    }

    @Test("null clears optional fields and resets genre to Pop")
    func nullClears() throws {
        let patch = try AlbumPatch.decode(json: bytes(#"{"year": null, "coverUrl": null, "genre": null}"#))
        #expect(patch == AlbumPatch(genre: .remove, year: .remove, coverUrl: .remove))
        let result = try patch.applied(to: current)
        #expect(result.year == nil && result.coverUrl == nil && result.genre == "Pop")
    }

    @Test("null title or artist is an error, reported with other problems")
    func nullRequired() {
        let errors = fieldErrors { _ = try AlbumPatch.decode(json: bytes(#"{"title": null, "artist": null, "year": 5, "yeer": 1}"#)) }
        #expect(errors.map(\.field) == ["yeer", "title", "artist", "year"])
        #expect(errors[1].message == "title cannot be removed (null); send a new non-empty string or leave it out")
    }

    @Test("an empty patch changes nothing")
    func emptyPatch() throws {
        let patch = try AlbumPatch.decode(json: bytes("{}"))
        #expect(patch.isEmpty)
        #expect(try patch.applied(to: current) == current)
    }

    @Test("a programmatic patch is validated as a whole when applied")
    func programmaticPatchValidated() {
        #expect(throws: ValidationFailure([
            FieldError(field: "artist", message: "artist cannot be removed; send a new non-empty string instead"),
            FieldError(field: "title", message: "title must not be empty or only whitespace"),
        ])) {
            try AlbumPatch(title: .set(" "), artist: .remove).applied(to: current)
        }
    }

    @Test("a non-object patch is malformed")
    func nonObject() {
        guard case .malformed? = libraryError({ _ = try AlbumPatch.decode(json: bytes("null")) }) else {
            Issue.record("expected malformed")
            return
        }
    }
}
