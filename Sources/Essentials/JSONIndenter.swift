/// Turns compact JSON text into indented text, so that one encoder makes both forms of a body
/// (`?pretty` is the compact bytes, re-indented): two spaces per level, one member or element
/// per line, `"key" : value`, empty objects and arrays as `{}` and `[]`.
///
/// Only whitespace outside strings changes: strings (and so escapes), numbers, literals and
/// member order are copied byte for byte, which is why the two forms cannot say different
/// things. The input must be valid JSON (it comes from our own encoders); whitespace between
/// tokens is dropped, and the output ends with one newline.
///
/// ```swift
/// JSONIndenter.indent(Array(#"{"a":[1,2],"b":{}}"#.utf8))
/// // {
/// //   "a" : [
/// //     1,
/// //     2
/// //   ],
/// //   "b" : {}
/// // }
/// ```
public enum JSONIndenter {
    /// The indented form of `json`.
    public static func indent(_ json: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(json.count + json.count / 2)
        json.withUnsafeBufferPointer { indent($0, to: &output) }
        return output
    }

    /// Appends the indented form of `json` to `output`.
    public static func indent(_ json: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
        var depth = 0
        var index = 0
        while index < json.count {
            let byte = json[index]
            switch byte {
            case quote:
                index = copyString(json, from: index, to: &output)
                continue
            case openBrace, openBracket:
                let close = byte == openBrace ? closeBrace : closeBracket
                let next = skipWhitespace(json, from: index + 1)
                output.append(byte)
                if next < json.count, json[next] == close {
                    output.append(close)
                    index = next + 1
                    continue
                }
                depth += 1
                newline(depth, &output)
            case closeBrace, closeBracket:
                depth -= 1
                newline(depth, &output)
                output.append(byte)
            case comma:
                output.append(byte)
                newline(depth, &output)
            case colon:
                output.append(space)
                output.append(colon)
                output.append(space)
            case space, 0x0A, 0x0D, 0x09:
                break
            default:
                output.append(byte)
            }
            index += 1
        }
        output.append(0x0A)
    }

    /// Copies the string starting at the quote at `start`; returns the index after its end.
    private static func copyString(_ json: UnsafeBufferPointer<UInt8>, from start: Int, to output: inout [UInt8]) -> Int {
        var index = start + 1
        while index < json.count {
            let byte = json[index]
            if byte == backslash {
                index += 2
                continue
            }
            index += 1
            if byte == quote { break }
        }
        let end = min(index, json.count)
        output.append(contentsOf: UnsafeBufferPointer(rebasing: json[start..<end]))
        return end
    }

    private static func skipWhitespace(_ json: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var index = start
        while index < json.count, json[index] == space || json[index] == 0x0A || json[index] == 0x0D || json[index] == 0x09 {
            index += 1
        }
        return index
    }

    private static func newline(_ depth: Int, _ output: inout [UInt8]) {
        output.append(0x0A)
        for _ in 0..<(2 * max(0, depth)) { output.append(space) }
    }

    private static let quote = UInt8(ascii: "\"")
    private static let backslash = UInt8(ascii: "\\")
    private static let openBrace = UInt8(ascii: "{")
    private static let closeBrace = UInt8(ascii: "}")
    private static let openBracket = UInt8(ascii: "[")
    private static let closeBracket = UInt8(ascii: "]")
    private static let comma = UInt8(ascii: ",")
    private static let colon = UInt8(ascii: ":")
    private static let space = UInt8(ascii: " ")
}
