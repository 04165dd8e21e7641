import FuzzSupport
@_spi(Fuzzing) import BlueLibraryAPI

// Differential: the archive's `JSONScanner` against `JSONSerialization` (which reads request
// bodies). Both must accept and reject the same documents and read the same values, as the
// field rules see them (numbers as `JSONNumber`: the double and the exact integer, if any).
//
// Where the two legitimately differ, the comparison is defined as follows:
// - Encodings: `JSONSerialization` also reads UTF-16 and UTF-32 (told apart by a byte order
//   mark or by zero bytes among the first four); JSON exchanged between systems is UTF-8
//   (RFC 8259 §8.1) and the scanner reads only that. Inputs that start with such a mark or have
//   a zero byte in the first four are not compared.
// - Duplicate keys: the scanner reports every member; `JSONSerialization` makes a dictionary,
//   where the last one wins. The scanner's members are reduced the same way before comparing,
//   with keys equal as Swift strings are (canonical equivalence, as in a dictionary).
// - Object order: a dictionary has none; members are matched by key. (Not by sorting: Swift's
//   `<` is not a strict order on some strings: "e\u{301}" and "\u{e9}`" are neither less.)
// - Number precision: the scanner reads a number that is not an exact integer with
//   `Double(String)` (correctly rounded); `JSONSerialization` is off by several units in the
//   last place for long digit strings (76 threes reads as 3.3333333333333315e+75, not
//   3.3333333333333335e+75) and for long fractions (922336320458777.808 reads as
//   922336320458778, which then counts as an exact integer). Doubles must agree to a relative
//   1e-9; when they are equal, the exact integer (below 9e15: what the field rules use for
//   `year`, limits, indexes) must be identical too.
// - Strings compare byte for byte (their UTF-8), not by canonical equivalence, except:
// - U+FEFF in strings: `JSONSerialization` drops a raw U+FEFF (EF BB BF) right after a
//   string's opening quote or after an escape (`"\n<U+FEFF>x"` reads as "\nx"; it decodes each
//   piece as UTF-8 text and loses a leading byte order mark). A Foundation bug, not ours
//   (`FuzzRegressionTests` records it as a known issue). A document with the bytes EF BB BF
//   anywhere but at its start is compared for accept/reject only, not for values.
// - Nesting: each reader has its own depth limit (the scanner 512); a document nested deeper
//   than the smaller limit is not compared.
// - Trailing commas: `JSONSerialization` accepts `[1,]` and `{"a": 1,}`, which RFC 8259 and
//   the scanner refuse. A document it accepts that the scanner refuses is compared without
//   its trailing commas. (The service is not lenient: request bodies are checked by the
//   scanner before `JSONSerialization` reads them; see FuzzRegressionTests.)
// - Numbers out of a double's range hidden by a duplicate key: `JSONSerialization` checks a
//   number only when it keeps it, so it accepts `{"a": 1e400, "a": 1}` (the later member wins;
//   alone, in an array, or under a key of its own, 1e400 is refused). The scanner refuses every
//   such number, as the service does (request bodies are scanned first). A document the scanner
//   refuses only for a number that cannot be represented is not compared when
//   `JSONSerialization` accepts it (`FuzzRegressionTests` records the case).
// - Top-level scalars (fragments) are allowed by both (request bodies are read with
//   `.fragmentsAllowed`), so they are compared like anything else.

private typealias Value = JSONFuzzingSeam.Value

/// The value with duplicate keys reduced (last wins).
private func normalized(_ value: Value) -> Value {
    switch value {
    case let .array(elements):
        return .array(elements.map(normalized))
    case let .object(members):
        var kept: [JSONFuzzingSeam.Member] = []
        for member in members {
            let member = JSONFuzzingSeam.Member(key: member.key, value: normalized(member.value))
            if let index = kept.firstIndex(where: { $0.key == member.key }) {
                kept[index].value = member.value
            } else {
                kept.append(member)
            }
        }
        return .object(kept)
    default:
        return value
    }
}

private func depth(_ value: Value) -> Int {
    switch value {
    case let .array(elements): 1 + (elements.map(depth).max() ?? 0)
    case let .object(members): 1 + (members.map { depth($0.value) }.max() ?? 0)
    default: 0
    }
}

/// Equal as defined above; `nil` or the path where they differ.
private func difference(_ a: Value, _ b: Value, at path: String = "$") -> String? {
    switch (a, b) {
    case (.null, .null): return nil
    case let (.bool(x), .bool(y)): return x == y ? nil : path
    case let (.number(x, i), .number(y, j)):
        return (x == y ? i == j : closeEnough(x, y)) ? nil : "\(path): \(x)/\(String(describing: i)) vs \(y)/\(String(describing: j))"
    case let (.string(x), .string(y)):
        return x.utf8.elementsEqual(y.utf8) ? nil : "\(path): \(Array(x.utf8)) vs \(Array(y.utf8))"
    case let (.array(x), .array(y)):
        guard x.count == y.count else { return "\(path): \(x.count) vs \(y.count) elements" }
        for (index, (p, q)) in zip(x, y).enumerated() {
            if let found = difference(p, q, at: "\(path)[\(index)]") { return found }
        }
        return nil
    case let (.object(x), .object(y)):
        guard x.count == y.count else { return "\(path): \(x.map(\.key)) vs \(y.map(\.key))" }
        for q in y {
            guard let p = x.first(where: { $0.key == q.key }) else { return "\(path): no key \(Array(q.key.utf8))" }
            if let found = difference(p.value, q.value, at: "\(path).\(p.key)") { return found }
        }
        return nil
    default:
        return "\(path): \(a) vs \(b)"
    }
}

/// Doubles agree to a relative 1e-9 (see "Number precision" above).
private func closeEnough(_ x: Double, _ y: Double) -> Bool {
    x == y || (x.isFinite && y.isFinite && abs(x - y) <= 1e-9 * max(abs(x), abs(y)))
}

/// The document without commas that are followed (after whitespace) by `]` or `}`, outside strings.
private func withoutTrailingCommas(_ bytes: [UInt8]) -> [UInt8] {
    var result: [UInt8] = []
    var inString = false
    var escaped = false
    for (index, byte) in bytes.enumerated() {
        if inString {
            if escaped { escaped = false } else if byte == 0x5C { escaped = true } else if byte == 0x22 { inString = false }
        } else if byte == 0x22 {
            inString = true
        } else if byte == 0x2C,
            let next = bytes[(index + 1)...].first(where: { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D) }),
            next == 0x5D || next == 0x7D
        {
            continue
        }
        result.append(byte)
    }
    return result
}

/// The smaller of the two readers' nesting limits.
private let depthLimit = 512

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = FuzzInput(data, size).bytes
    let scanned = Result { () throws(JSONFuzzingSeam.SyntaxError) in try JSONFuzzingSeam.scan(bytes) }
    let serialized = Result { try JSONFuzzingSeam.serialization(bytes) }
    let otherEncoding = bytes.prefix(4).contains(0) || bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE])
    if otherEncoding { return 0 }
    let innerBOM = bytes.count > 3 && bytes[1...].indices.contains { index in
        index + 2 < bytes.count && bytes[index] == 0xEF && bytes[index + 1] == 0xBB && bytes[index + 2] == 0xBF
    }
    switch (scanned, serialized) {
    case let (.success(a), .success(b)):
        guard depth(a) <= depthLimit, !innerBOM else { return 0 }
        if let found = difference(normalized(a), b) {
            check(false, "the readers disagree at \(found)")
        }
    case let (.success(a), .failure(error)):
        guard depth(a) <= depthLimit else { return 0 }
        check(false, "the scanner accepts what JSONSerialization refuses (\(error))")
    case let (.failure(error), .success(b)):
        guard depth(b) <= depthLimit, !error.description.contains("nested more than"),
              !error.description.contains("cannot be represented")
        else { return 0 }
        let stripped = withoutTrailingCommas(bytes)
        if stripped != bytes, let a = try? JSONFuzzingSeam.scan(stripped) {
            if !innerBOM, let found = difference(normalized(a), b) { check(false, "without trailing commas, the readers disagree at \(found)") }
            return 0
        }
        check(false, "JSONSerialization accepts what the scanner refuses (\(error))")
    case (.failure, .failure):
        break
    }
    return 0
}
