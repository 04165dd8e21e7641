import Essentials
import Foundation
import TestThreads
import Testing

@Suite(.ownThreads) struct JSONStringTests {
    @Test func escapesQuotesBackslashesAndControlCharacters() {
        #expect(JSONString.quoted("plain") == "\"plain\"")
        #expect(JSONString.quoted("say \"hi\"\\") == #""say \"hi\"\\""#)
        #expect(JSONString.quoted("a\nb\rc\td") == #""a\nb\rc\td""#)
        #expect(JSONString.quoted("\u{0}\u{1}\u{1F}\u{7F}") == "\"\\u0000\\u0001\\u001f\u{7F}\"")
        #expect(JSONString.quoted("é😀/") == "\"é😀/\"")
        #expect(JSONString.quoted("") == "\"\"")
    }

    /// Text a client chose, quoted back in an event, is printable ASCII only, so a
    /// reader that assumes Latin-1 (as Python's requests does for text/event-stream) reads
    /// the same characters; JSON decoding gives the text back exactly.
    @Test func quotedASCIIEscapesEverythingOutsidePrintableASCII() throws {
        #expect(JSONString.quotedASCII("plain 12") == "\"plain 12\"")
        #expect(JSONString.quotedASCII("\u{1E}\u{90}n") == #""\u001e\u0090n""#)
        #expect(JSONString.quotedASCII("é\u{7F}\"\\\n") == #""\u00e9\u007f\"\\\n""#)
        #expect(JSONString.quotedASCII("😀") == #""\ud83d\ude00""#)
        for text in ["\u{1E}\u{90}n", "é😀/\u{0}\u{FFFD}", "a\"b\\c\td", String(repeating: "ü", count: 40)] {
            let quoted = JSONString.quotedASCII(text)
            #expect(quoted.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }, "\(quoted)")
            let decoded = try JSONSerialization.jsonObject(with: Data(quoted.utf8), options: [.fragmentsAllowed]) as? String
            #expect(decoded == text)
        }
    }

    @Test func appendsNullForNil() {
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        JSONString.append(nil as String?, to: &bytes)
        JSONString.append("x" as String?, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "[null\"x\"")
    }

    /// Every ASCII character at every position of a longer string reads back as itself
    /// (the runs copied in one piece are cut at the right places).
    @Test func everyASCIICharacterRoundTripsThroughJSONSerialization() throws {
        for scalar in (0..<0x80).compactMap(Unicode.Scalar.init) {
            for prefix in 0..<3 {
                let text = String(repeating: "a", count: prefix) + String(Character(scalar)) + "zé"
                var bytes: [UInt8] = []
                JSONString.append(text, to: &bytes)
                let decoded = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) as? String
                #expect(decoded == text, "U+\(String(scalar.value, radix: 16))")
            }
        }
    }

    @Test func appendsToWhatIsAlreadyThere() {
        var bytes = Array("{\"k\":".utf8)
        JSONString.append("v\"", to: &bytes)
        bytes.append(UInt8(ascii: "}"))
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"k":"v\""}"#)
    }

    /// The escaper the project had before (three copies of it), kept here as the oracle: the
    /// bytes must not change, or every ETag and stored export would.
    private static func previousEscaper(_ value: String) -> [UInt8] {
        var buffer: [UInt8] = [34]
        for byte in value.utf8 {
            switch byte {
            case 34: buffer += [92, 34]
            case 92: buffer += [92, 92]
            case 0x0A: buffer += [92, UInt8(ascii: "n")]
            case 0x0D: buffer += [92, UInt8(ascii: "r")]
            case 0x09: buffer += [92, UInt8(ascii: "t")]
            case 0x00..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                buffer += [92, UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            default: buffer.append(byte)
            }
        }
        buffer.append(34)
        return buffer
    }

    @Test func bytesAreTheSameAsBefore() {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [Character] = ["a", "\"", "\\", "\n", "\r", "\t", "\u{0}", "\u{1b}", "\u{1f}", " ", "é", "😀", "/", "\u{7f}", "\u{2028}"]
        for length in 0..<200 {
            let text = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
            var bytes: [UInt8] = []
            JSONString.append(text, to: &bytes)
            #expect(bytes == Self.previousEscaper(text), "\(text.debugDescription)")
        }
    }
}
