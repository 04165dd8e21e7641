import AlbumStoreContract
import TestThreads
import Testing
@testable import BlueLibraryAPI
@testable import Library

@Suite("Album input validation", .ownThreads)
struct AlbumInputValidationTests {
    @Test("a full valid body is trimmed and typed")
    func validBody() throws {
        // Given a body with padded text and every field
        let body = #"{"title": "  Best of Bowie ", "artist": "David Bowie", "genre": "Rock", "year": 1992,"#
            + #" "coverUrl": "https://example.com/c.png"}"#
        // When it is decoded
        let input = try AlbumInput.decode(json: bytes(body))
        // Then text is trimmed and every field kept
        #expect(input == (try AlbumInput(
            title: "Best of Bowie", artist: "David Bowie", genre: "Rock", year: 1992, coverUrl: "https://example.com/c.png")))
    }

    @Test("genre defaults to Pop; optional fields may be absent or null")
    func defaults() throws {
        // Given bodies without genre, and with nulls
        let absent = try AlbumInput.decode(json: bytes(#"{"title": "T", "artist": "A"}"#))
        let nulls = try AlbumInput.decode(json: bytes(#"{"title": "T", "artist": "A", "genre": null, "year": null, "coverUrl": null}"#))
        // Then genre is Pop and the optionals are nil
        #expect(absent.genre == "Pop")
        #expect(nulls == absent)
        #expect(absent.year == nil && absent.coverUrl == nil)
    }

    @Test("year may be a 4-digit string, as the tutorial stored it", arguments: [
        (#""1992""#, 1992), ("1992", 1992), ("1992.0", 1992), (#""9999""#, 9999), ("1000", 1000),
    ])
    func yearForms(json: String, expected: Int) throws {
        // When a year is given as a string or number
        let input = try AlbumInput.decode(json: bytes(#"{"title": "T", "artist": "A", "year": \#(json)}"#))
        // Then it is stored as an integer
        #expect(input.year == expected)
    }

    @Test("bad years are refused with the range and both accepted forms", arguments: [
        "999", "10000", #""92""#, #""19 92""#, #""abcd""#, "1992.5", "true", "[1992]", #""0999""#,
    ])
    func badYears(json: String) {
        // When the year is out of range or of the wrong kind
        let errors = fieldErrors { _ = try AlbumInput.decode(json: bytes(#"{"title": "T", "artist": "A", "year": \#(json)}"#)) }
        // Then exactly one error names the year and explains what to send
        #expect(errors.map(\.field) == ["year"])
        #expect(errors.first?.message.hasPrefix(
            "year must be an integer between 1000 and 9999, or a 4-digit string") == true)
    }

    @Test("each bad text field gets its own message")
    func badTextFields() {
        // Given a missing title, a whitespace-only artist and a too-long genre
        let long = String(repeating: "x", count: 501)
        let errors = fieldErrors {
            _ = try AlbumInput.decode(json: bytes(#"{"artist": "   ", "genre": "\#(long)"}"#))
        }
        // Then all three are reported with what to fix
        #expect(errors == [
            FieldError(field: "title", message: "title is required; send a non-empty string"),
            FieldError(field: "artist", message: "artist must not be empty or only whitespace"),
            FieldError(field: "genre", message: "genre must be at most 500 characters (got 501)"),
        ])
    }

    @Test("500 characters after trimming is the longest title accepted")
    func titleLengthBoundary() throws {
        let exactly500 = String(repeating: "é", count: 500)
        #expect(try AlbumInput(title: "  " + exactly500 + "  ", artist: "A").title == exactly500)
        #expect(throws: ValidationFailure.self) { try AlbumInput(title: exactly500 + "é", artist: "A") }
    }

    @Test("wrong JSON types are field errors, not crashes")
    func wrongTypes() {
        // Given every field with a wrong type
        let errors = fieldErrors {
            _ = try AlbumInput.decode(json: bytes(#"{"title": 5, "artist": ["A"], "genre": {}, "year": false, "coverUrl": 7}"#))
        }
        // Then each is named with what it must be and what it got
        #expect(errors.map(\.field) == ["title", "artist", "genre", "year", "coverUrl"])
        #expect(errors[0].message == "title must be a string, not a number")
        #expect(errors[1].message == "artist must be a string, not an array")
        #expect(errors[3].message.hasSuffix("(got a boolean)"))
    }

    @Test("cover URLs must be absolute http(s) and at most 2048 characters", arguments: [
        "ftp://example.com/c.png", "/covers/c.png", "not a url", "file:///etc/passwd", "https://",
        "https://example.com/" + String(repeating: "a", count: 2040),
    ])
    func badCoverURLs(url: String) {
        let errors = fieldErrors {
            _ = try AlbumInput.decode(json: bytes(#"{"title": "T", "artist": "A", "coverUrl": "\#(url)"}"#))
        }
        #expect(errors.map(\.field) == ["coverUrl"])
    }

    @Test("an unknown field is rejected with a did-you-mean hint")
    func unknownField() {
        // Given a curl user typing "titel"
        let errors = fieldErrors { _ = try AlbumInput.decode(json: bytes(#"{"titel": "T", "artist": "A"}"#)) }
        // Then the typo is named, the closest field suggested, and the missing title reported too
        #expect(errors.map(\.field) == ["titel", "title"])
        #expect(errors[0].message == "titel is not a known field; did you mean title? Known fields: title, artist, genre, year, coverUrl")
    }

    @Test("server-assigned fields cannot be sent")
    func readOnlyFields() {
        let errors = fieldErrors { _ = try AlbumInput.decode(json: bytes(#"{"id": "x", "title": "T", "artist": "A"}"#)) }
        #expect(errors == [FieldError(field: "id", message: "id is assigned by the server and cannot be set; remove it")])
    }

    @Test("syntax errors and non-objects are malformed, with a hint")
    func malformed() {
        for body in ["", "  ", "{\"title\": ", "[1, 2]", "\"text\""] {
            guard case .malformed(let message)? = libraryError({ _ = try AlbumInput.decode(json: bytes(body)) }) else {
                Issue.record("expected .malformed for \(body)")
                continue
            }
            #expect(message.hasPrefix("the request body"))
        }
    }

    @Test("the typed initializer reports every bad field at once")
    func typedInitializerReportsAll() {
        // When every field is bad
        #expect {
            try AlbumInput(title: "", artist: " ", genre: "", year: 12, coverUrl: "nope")
        } throws: { error in
            // Then all five are listed, in field order
            (error as? ValidationFailure)?.fields == ["title", "artist", "genre", "year", "coverUrl"]
        }
    }

    @Test("add request carries an optional integer index")
    func addRequest() throws {
        let request = try AlbumAddRequest.decode(json: bytes(#"{"title": "T", "artist": "A", "index": 2}"#))
        #expect(request.index == 2 && request.input.title == "T")
        // 0 and 1 are numbers, not booleans (Foundation would bridge them to Bool)
        #expect(try AlbumAddRequest.decode(json: bytes(#"{"title": "T", "artist": "A", "index": 1}"#)).index == 1)
        #expect(try AlbumAddRequest.decode(json: bytes(#"{"title": "T", "artist": "A", "index": 0}"#)).index == 0)
        #expect(fieldErrors { _ = try AlbumAddRequest.decode(json: bytes(#"{"title": "T", "artist": "A", "index": true}"#)) }
            .first?.message == "index must be a whole number from 0 to 2147483647 (got a boolean)")
        #expect(fieldErrors { _ = try AlbumAddRequest.decode(json: bytes(#"{"title": "T", "artist": "A", "index": "x"}"#)) }
            .map(\.field) == ["index"])
    }
}
