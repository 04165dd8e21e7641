import Foundation
import TestThreads
import Testing
@testable import BlueLibraryAPI
@testable import Library

/// Inputs the fuzz targets in `Fuzz/` found (`scripts/fuzz`), kept as ordinary tests.
@Suite("Fuzzing regressions", .ownThreads)
struct FuzzRegressionTests {
    /// fuzz-json-scanner: `Double("11E111111")` is infinity, not nil, so the scanner must refuse a
    /// number JSON cannot hold (as `JSONSerialization` does for request bodies), not read `inf`.
    @Test("numbers too large for a double are refused, as JSONSerialization refuses them", arguments: [
        "11E111111", "1e400", "-1e400", "[1.5e309]", #"{"year": 1e999}"#,
        String(repeating: "9", count: 400) + ".0",
    ])
    func overflowingNumbers(json: String) throws {
        let bytes = Array(json.utf8)
        let scanned = JSONScanner.syntaxError(in: bytes)
        #expect(scanned?.reason.contains("cannot be represented") == true)
        #expect((try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])) == nil)
    }

    /// fuzz-json-scanner (base64 `eyJhIjogMWU0MDAsICJhIjogMX0=`): `JSONSerialization` checks a
    /// number only when it keeps it, so an out-of-range number under a key that a later member
    /// repeats is accepted (the later one wins). The scanner refuses it, and request bodies are
    /// scanned first, so the service refuses it too.
    @Test("a number too large for a double is refused even when a duplicate key would hide it")
    func overflowingNumberHiddenByADuplicateKey() {
        let bytes = Array(#"{"a": 1e400, "a": 1}"#.utf8)
        #expect(JSONScanner.syntaxError(in: bytes)?.reason.contains("cannot be represented") == true)
    }

    @Test("an archive with an infinite number is malformed JSON, not an invalid field")
    func archiveWithOverflowingNumber() {
        let json = #"{"format": "bluelibrary.archive", "formatVersion": 1e400, "albums": []}"#
        #expect(throws: LibraryError.self) { try ArchiveDocument.parse(json: Array(json.utf8)) }
        do {
            _ = try ArchiveDocument.parse(json: Array(json.utf8))
        } catch {
            #expect(error.code == "malformed")
        }
    }

    /// The largest finite numbers and the smallest still read (underflow to zero is fine).
    @Test("numbers at the edge of a double are read", arguments: ["1.7976931348623157e308", "-1.7976931348623157e308", "1e-400"])
    func edgeNumbers(json: String) {
        let bytes = Array(json.utf8)
        let number = bytes.withUnsafeBufferPointer { buffer -> JSONNumber? in
            var scanner = JSONScanner(buffer)
            return try? scanner.readNumber()
        }
        #expect(number?.double.isFinite == true)
    }
}

/// fuzz-json-scanner: `JSONSerialization` accepts a trailing comma (`{"": 0,}`, base64
/// `eyIiOiAwLH0=`), which RFC 8259 and the archive's scanner refuse. So that a request body and
/// an archive are held to the same syntax, request bodies are checked by the scanner first.
@Suite("Fuzzing regressions: request body syntax", .ownThreads)
struct RequestBodySyntaxRegressionTests {
    @Test("request bodies refuse what the archive scanner refuses", arguments: [
        #"{"": 0,}"#, #"{"title": "x", "artist": "y",}"#, "[1,]", #"{"a": [1, 2,]}"#,
    ])
    func trailingCommas(json: String) {
        let bytes = Array(json.utf8)
        do {
            _ = try JSONObjectParser.value(from: bytes, what: "the request body")
            Issue.record("\(json) was accepted")
        } catch {
            #expect(LibraryError(error).code == "malformed")
            #expect(LibraryError(error).message.contains("line 1, column"))
        }
        #expect(throws: BodyError.self) { try AlbumInput.decode(json: bytes) }
    }

    @Test("UTF-16 bodies are refused: JSON between systems is UTF-8 (RFC 8259 §8.1)")
    func utf16() {
        let bytes: [UInt8] = [0xFF, 0xFE] + Array(#"{"a":1}"#.utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        #expect(throws: BodyError.self) { try JSONObjectParser.value(from: bytes, what: "the request body") }
    }
}

/// fuzz-json-scanner (base64 `IlwvXGJmXHJcdFwi77u/e3Qi`): `JSONSerialization` drops a raw U+FEFF
/// right after a string's opening quote or after an escape; the archive scanner keeps it. So
/// an album title beginning with U+FEFF loses it when created by a request body and keeps it
/// when imported from an archive. A Foundation bug; fixing it here would mean reading request
/// bodies without `JSONSerialization`. Recorded as a known issue until then.
@Suite("Fuzzing regressions: JSONSerialization and U+FEFF", .ownThreads)
struct ByteOrderMarkInStringsTests {
    @Test("a U+FEFF inside a string survives both readers", arguments: ["\"\u{FEFF}x\"", "\"a\\n\u{FEFF}x\""])
    func byteOrderMarkInAString(json: String) throws {
        let bytes = Array(json.utf8)
        let scanned = bytes.withUnsafeBufferPointer { buffer -> String? in
            var scanner = JSONScanner(buffer)
            return try? scanner.readString()
        }
        #expect(scanned?.unicodeScalars.contains("\u{FEFF}") == true)
        withKnownIssue("JSONSerialization drops U+FEFF after an opening quote or an escape") {
            let body = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) as? String
            #expect(body == scanned)
        }
    }
}
