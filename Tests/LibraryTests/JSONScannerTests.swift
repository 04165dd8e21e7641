import Essentials
import Foundation
import TestThreads
import Testing
@testable import BlueLibraryAPI
@testable import Library

/// Runs `body` over the UTF-8 of `json` (or raw bytes) and requires the whole input be used.
private func scan<T>(
    _ bytes: [UInt8], maximumDepth: Int = JSONScanner.defaultMaximumDepth,
    _ body: (inout JSONScanner) throws(JSONSyntaxError) -> T
) -> Result<T, JSONSyntaxError> {
    bytes.withUnsafeBufferPointer { buffer in
        var scanner = JSONScanner(buffer, maximumDepth: maximumDepth)
        do throws(JSONSyntaxError) {
            let value = try body(&scanner)
            try scanner.finish()
            return .success(value)
        } catch {
            return .failure(error)
        }
    }
}

/// The single value `json` holds.
private func value(_ json: String) -> Result<JSONFieldValue, JSONSyntaxError> {
    scan(Array(json.utf8)) { (scanner: inout JSONScanner) throws(JSONSyntaxError) in try scanner.readValue() }
}

private func string(_ bytes: [UInt8]) -> Result<String, JSONSyntaxError> {
    scan(bytes) { (scanner: inout JSONScanner) throws(JSONSyntaxError) in try scanner.readString() }
}

/// The syntax error `json` gives, if any.
private func syntaxError(_ json: String, maximumDepth: Int = JSONScanner.defaultMaximumDepth) -> JSONSyntaxError? {
    syntaxError(Array(json.utf8), maximumDepth: maximumDepth)
}

private func syntaxError(_ bytes: [UInt8], maximumDepth: Int = JSONScanner.defaultMaximumDepth) -> JSONSyntaxError? {
    let result = scan(bytes, maximumDepth: maximumDepth) { (scanner: inout JSONScanner) throws(JSONSyntaxError) in
        try scanner.skipValue()
    }
    if case .failure(let error) = result { return error }
    return nil
}

@Suite("JSON scanner", .ownThreads)
struct JSONScannerTests {
    @Test("simple escapes are unescaped")
    func simpleEscapes() throws {
        #expect(try string(Array(#""a\"b\\c\/d\be\ff\ng\rh\ti""#.utf8)).get() == "a\"b\\c/d\u{8}e\u{C}f\ng\rh\ti")
        #expect(try string(Array(#""plain""#.utf8)).get() == "plain")
        #expect(try string(Array(#""""#.utf8)).get() == "")
    }

    @Test("\\u escapes, including surrogate pairs and NUL")
    func unicodeEscapes() throws {
        #expect(try string(Array(#""\u00e9\u00C9\u2603 \uD83D\uDE00 \ud834\udd1e""#.utf8)).get() == "éÉ☃ 😀 𝄞")
        #expect(try string(Array(#""a\u0000b""#.utf8)).get() == "a\u{0}b")
        #expect(try string(Array(#""\u0041\u0301""#.utf8)).get() == "A\u{301}")
        // Raw UTF-8 is kept as it is, next to escapes.
        #expect(try string(Array("\"日本\\n語 🎵\"".utf8)).get() == "日本\n語 🎵")
    }

    @Test("unpaired surrogates are refused", arguments: [
        #""\uD800""#, #""\uDC00""#, #""\uD800\u0041""#, #""\uD800x""#, #""\uDBFF\uDBFF""#,
    ])
    func unpairedSurrogates(json: String) throws {
        let error = try #require(syntaxError(json))
        #expect(error.reason.contains("surrogate"))
    }

    @Test("bad escapes are refused with their position")
    func badEscapes() throws {
        let bad = try #require(syntaxError(#"  "ab\x""#))
        #expect(bad.reason.hasPrefix("invalid escape sequence \\x"))
        #expect(bad.offset == 5 && bad.line == 1 && bad.column == 6)
        let shortHex = try #require(syntaxError(#""\u12G4""#))
        #expect(shortHex.reason.contains("expected 4 hex digits"))
        #expect(shortHex.offset == 5)
    }

    @Test("invalid UTF-8 is refused at the offending byte", arguments: [
        ([0x22, 0xC3, 0x28, 0x22], 2, "cannot continue"), // lead byte without its continuation
        ([0x22, 0x61, 0xFF, 0x22], 2, "cannot start"), // never valid
        ([0x22, 0xC0, 0x80, 0x22], 1, "cannot start"), // overlong NUL
        ([0x22, 0xE0, 0x80, 0x80, 0x22], 2, "cannot continue"), // overlong 3-byte form
        ([0x22, 0xED, 0xA0, 0x80, 0x22], 2, "cannot continue"), // an encoded surrogate
        ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 2, "cannot continue"), // beyond U+10FFFF
        ([0x22, 0x80, 0x22], 1, "cannot start"), // a lone continuation byte
        ([0x22, 0xF0, 0x9F, 0x98], 4, "ends inside a character"), // truncated
    ] as [([UInt8], Int, String)])
    func invalidUTF8(bytes: [UInt8], offset: Int, reason: String) throws {
        let error = try #require(syntaxError(bytes))
        #expect(error.reason.hasPrefix("invalid UTF-8"))
        #expect(error.reason.contains(reason))
        #expect(error.offset == offset)
    }

    @Test("control characters must be escaped")
    func controlCharacters() throws {
        let error = try #require(syntaxError("[\"a\nb\"]"))
        #expect(error.reason.hasPrefix("control character U+000A must be escaped"))
        #expect(error.line == 1 && error.column == 4 && error.offset == 3)
        #expect(syntaxError("\"tab\there\"") != nil)
        #expect(syntaxError("\"del \u{7F} is fine\"") == nil)
    }

    @Test("integers are exact; numbers know whether they are integral", arguments: [
        ("0", 0.0, 0 as Int?), ("-0", 0.0, 0), ("1992", 1992, 1992), ("-42", -42, -42), ("1992.0", 1992, 1992),
        ("1.992e3", 1992, 1992), ("1E3", 1000, 1000), ("2e+2", 200, 200), ("1.5", 1.5, nil), ("-2.5E-3", -0.0025, nil),
        ("8999999999999999", 8_999_999_999_999_999, 8_999_999_999_999_999),
        ("9007199254740993", 9_007_199_254_740_992, nil), // too large to be exact as a double (rounds to 2^53)
        ("-9223372036854775808", -9_223_372_036_854_775_808, nil),
        ("12345678901234567890123", 1.2345678901234568e22, nil), ("1.7976931348623157e308", .greatestFiniteMagnitude, nil),
        // "1e400" (infinity) is refused: see FuzzRegressionTests.
    ] as [(String, Double, Int?)])
    func numbers(json: String, double: Double, integer: Int?) throws {
        guard case .number(let number) = try value(json).get() else {
            Issue.record("\(json) is not a number")
            return
        }
        #expect(number.double == double)
        #expect(number.integer == integer)
    }

    @Test("malformed numbers are refused", arguments: [
        "01", "-01", "1.", ".5", "-", "1e", "1e+", "+1", "NaN", "Infinity", "0x10", "1.e5", "--1", "1..2",
    ])
    func badNumbers(json: String) throws {
        #expect(syntaxError(json) != nil)
    }

    @Test("booleans and null are distinct from numbers")
    func literals() throws {
        #expect(try value("true").get() == .bool(true))
        #expect(try value("false").get() == .bool(false))
        #expect(try value("null").get() == .null)
        #expect(try value("1").get() != .bool(true))
        #expect(JSONFieldValue.bool(true).integer == nil)
        #expect(JSONFieldValue.bool(true).kindDescription == "a boolean")
        #expect(try value("1").get().kindDescription == "a number")
        #expect(syntaxError("tru") != nil)
        #expect(syntaxError("nul") != nil)
        #expect(syntaxError("True") != nil)
    }

    @Test("containers are read by kind and skipped, with their syntax checked")
    func containers() throws {
        #expect(try value(#" {"a": [1, {"b": null}], "c": "d"} "#).get() == .object)
        #expect(try value("[[], {}, [[\"x\"]]]").get() == .array)
        #expect(syntaxError("[1, 2,]")?.reason.contains("expected a value") == true)
        #expect(syntaxError(#"{"a": 1,}"#)?.reason.contains("expected a quoted key") == true)
        #expect(syntaxError(#"{"a" 1}"#)?.reason.contains("expected ':'") == true)
        #expect(syntaxError(#"{'a': 1}"#) != nil)
        #expect(syntaxError(#"{a: 1}"#) != nil)
        #expect(syntaxError("[1 2]")?.reason.contains("expected ',' or ']'") == true)
        #expect(syntaxError("[1, /* no */ 2]") != nil)
        #expect(syntaxError("[,1]") != nil)
    }

    @Test("the pull API walks objects and arrays member by member")
    func pullAPI() throws {
        let json = #"{"name": "x", "list": [1, "two", null], "nested": {"deep": [[]]}, "last": true}"#
        let walked = try scan(Array(json.utf8)) { (scanner: inout JSONScanner) throws(JSONSyntaxError) -> [String] in
            var seen: [String] = []
            try scanner.beginObject()
            while let key = try scanner.nextKey() {
                seen.append(key)
                if key == "list" {
                    try scanner.beginArray()
                    while try scanner.nextElement() { seen.append(try scanner.readValue().kindDescription) }
                } else if key == "name" {
                    seen.append(try scanner.readString())
                } else {
                    try scanner.skipValue()
                }
            }
            return seen
        }.get()
        #expect(walked == ["name", "x", "list", "a number", "a string", "null", "nested", "last"])
    }

    @Test("nesting is limited")
    func depthLimit() throws {
        #expect(syntaxError("[[[1]]]", maximumDepth: 3) == nil)
        let error = try #require(syntaxError("[[[[1]]]]", maximumDepth: 3))
        #expect(error.reason == "objects and arrays are nested more than 3 deep")
        #expect(error.offset == 3)
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(syntaxError(deep)?.reason.contains("nested more than 512 deep") == true)
        let ok = String(repeating: "{\"a\":", count: 512) + "1" + String(repeating: "}", count: 512)
        #expect(syntaxError(ok) == nil)
    }

    @Test("text after the document is refused", arguments: ["{} x", "1 2", "{}}", "[] []", "null,"])
    func trailingGarbage(json: String) throws {
        let error = try #require(syntaxError(json))
        #expect(error.reason.hasSuffix("after the end of the document"))
    }

    @Test("truncated input says what was expected and where")
    func truncated() throws {
        let array = try #require(syntaxError("{\"a\": [1, 2"))
        #expect(array.reason == "unexpected end of input inside an array; expected ']'")
        #expect(array.offset == 11 && array.line == 1 && array.column == 12)
        let text = try #require(syntaxError("{\n  \"title\": \"unfinished"))
        #expect(text.reason.contains("inside a string that starts at byte offset 13"))
        #expect(text.line == 2)
        #expect(text.description.hasSuffix("at line 2, column 23 (byte offset 24)"))
        #expect(try #require(syntaxError("{\"a\":")).reason == "unexpected end of input; expected a value")
        #expect(try #require(syntaxError("")).reason == "unexpected end of input; expected a value")
        #expect(try #require(syntaxError("{\"a\"")).reason.contains("expected ':'"))
        #expect(try #require(syntaxError("[\"\\u12")).reason.contains("expected 4 hex digits"))
    }

    @Test("columns count characters, not bytes")
    func columns() throws {
        let error = try #require(syntaxError("[\"é☃\", x]"))
        #expect(error.offset == 10)
        #expect(error.column == 8)
    }

    @Test("a UTF-8 byte order mark is skipped; whitespace around the document is fine")
    func byteOrderMark() throws {
        #expect(syntaxError([0xEF, 0xBB, 0xBF] + Array(" {} \n\t\r".utf8)) == nil)
    }

    @Test("long strings with escapes and non-ASCII at every position round trip")
    func longStrings() throws {
        // Exercises the eight-bytes-at-a-time scan at every alignment.
        for length in 0..<40 {
            for special in ["\"", "\\", "\n", "é", "\u{1}", "😀"] {
                let text = String(repeating: "a", count: length) + special + String(repeating: "b", count: 40 - length)
                var encoded: [UInt8] = []
                JSONString.append(text, to: &encoded)
                #expect(try string(encoded).get() == text)
            }
        }
    }
}
