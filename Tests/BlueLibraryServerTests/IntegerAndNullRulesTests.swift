import TestThreads
import Testing
@testable import BlueLibraryAPI
@testable import BlueLibraryServer
@testable import Library

/// One rule for every integer in a JSON body (an integral JSON number, within the
/// field's range) and for `null` (refused unless the spec lists it), in the bodies of
/// `PUT /state`, `POST /api/deleteAlbum` (JSON and the bare number) and the album create.
@Suite(.ownThreads) struct IntegerAndNullRulesTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// The fields an `.invalid` names (or a description of any other outcome).
    static func refusal<T>(_ body: () throws(LibraryError) -> T) -> [String] {
        do {
            let value = try body()
            return ["accepted: \(value)"]
        } catch {
            guard case .invalid(let failure) = error else { return ["\(error.code)"] }
            return failure.errors.map(\.field)
        }
    }

    /// The same for a body the wire module reads (its refusal as the domain's).
    static func refusal<T>(_ body: () throws(BodyError) -> T) -> [String] {
        refusal { () throws(LibraryError) in try LibraryError.reading(body) }
    }

    /// `2`, `2.0` and `2e0` are the same number in JSON and in JSON Schema: all are 2, the bare
    /// body as much as `{"index": ...}` (the bare `1.0` was malformed while `{"index": 1.0}` passed).
    @Test func integralNumbersAreIntegersInEveryForm() throws {
        for text in ["2", "2.0", "2e0", "0.2e1", "20e-1"] {
            #expect(try IndexRequest.decode(json: Self.bytes(text), allowPlainText: true) == 2, "\(text)")
            #expect(try IndexRequest.decode(json: Self.bytes(#"{"index": \#(text)}"#), allowPlainText: true) == 2, "\(text)")
            #expect(try StateRequest.decode(json: Self.bytes(#"{"currentAlbumIndex": \#(text)}"#)) == .index(2))
            #expect(try AlbumAddRequest.decode(json: Self.bytes(#"{"title": "T", "artist": "A", "index": \#(text)}"#)).index == 2)
        }
        #expect(try IndexRequest.decode(json: Self.bytes(" 02\n"), allowPlainText: true) == 2, "leading zeros, as the tutorial's parser")
    }

    /// A fraction, a number past 2147483647 (also 10^18 and more, which were "not an integer
    /// position") and a non-number are refused naming the field and the range, alike in both forms.
    @Test func outOfRangeAndFractionsNameTheFieldAndTheRange() {
        for text in ["1.5", "2147483648", "1000000000000000000", "9223372036854775808", "1e300"] {
            for body in [text, #"{"index": \#(text)}"#] {
                do {
                    _ = try IndexRequest.decode(json: Self.bytes(body), allowPlainText: true)
                    Issue.record("\(body) was accepted")
                } catch {
                    guard case .invalid(let failure) = error else { Issue.record("\(body): \(error)"); continue }
                    #expect(failure.errors.map(\.field) == ["index"])
                    #expect(failure.errors[0].message.contains("index must be a whole number from 0 to 2147483647"), "\(failure.errors)")
                }
            }
            #expect(Self.refusal { () throws(LibraryError) in try StateRequest.decode(json: Self.bytes(#"{"currentAlbumIndex": \#(text)}"#)) }
                == ["currentAlbumIndex"])
            #expect(Self.refusal { () throws(BodyError) in
                try AlbumAddRequest.decode(json: Self.bytes(#"{"title": "T", "artist": "A", "index": \#(text)}"#))
            } == ["index"])
        }
        #expect(Self.refusal { () throws(BodyError) in try IndexRequest.decode(json: Self.bytes("-1"), allowPlainText: true) }
            == ["index-out-of-range"], "a negative index stays 400 index-out-of-range")
        #expect(Self.refusal { () throws(BodyError) in try IndexRequest.decode(json: Self.bytes("0x10"), allowPlainText: true) }
            == ["malformed"])
        #expect(Self.refusal { () throws(BodyError) in try IndexRequest.decode(json: Self.bytes("1."), allowPlainText: true) }
            == ["malformed"])
    }

    /// `null` where the spec has no `'null'` is a 422 naming the field (it was taken as absent);
    /// the album create's `index` is nullable and keeps meaning "append".
    @Test func nullIsRefusedUnlessNullable() throws {
        #expect(Self.refusal { () throws(LibraryError) in try StateRequest.decode(json: Self.bytes(#"{"currentAlbumIndex": 1, "albumId": null}"#)) }
            == ["albumId"])
        #expect(Self.refusal { () throws(LibraryError) in try StateRequest.decode(json: Self.bytes(#"{"albumID": null}"#)) } == ["albumID"])
        #expect(Self.refusal { () throws(LibraryError) in try StateRequest.decode(json: Self.bytes(#"{"currentAlbumIndex": null}"#)) }
            == ["currentAlbumIndex"])
        #expect(Self.refusal { () throws(BodyError) in try IndexRequest.decode(json: Self.bytes(#"{"index": null}"#), allowPlainText: true) }
            == ["index"])
        #expect(try AlbumAddRequest.decode(json: Self.bytes(#"{"title": "T", "artist": "A", "index": null}"#)).index == nil)
        #expect(Self.refusal { () throws(LibraryError) in
            try ViewDefinitionRequest.decodeUpdate(json: Self.bytes(#"{"filter": {"genre": null, "yearFrom": null}}"#))
        }.sorted() == ["filter.genre", "filter.yearFrom"])
    }

    @Test func theJSONNumberGrammar() {
        for text in ["0", "-0", "12", "1.5", "1e3", "1E+3", "-2.5e-3"] { #expect(IndexRequest.isJSONNumber(text), "\(text)") }
        for text in ["", "-", "+1", "01", "1.", ".5", "1e", "0x10", "1 2", "NaN", "inf"] { #expect(!IndexRequest.isJSONNumber(text), "\(text)") }
    }
}
