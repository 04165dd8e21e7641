/// Crockford's base32 alphabet, as used by ULIDs: digits and upper-case letters without
/// I, L, O and U, so ids survive being read aloud or typed and never spell words by accident.
///
/// See <https://www.crockford.com/base32.html> and <https://github.com/ulid/spec>.
enum CrockfordBase32 {
    /// The 32 symbols in value order.
    static let alphabet: [UInt8] = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// The value of one ASCII symbol, accepting lower case; `nil` for anything outside the
    /// alphabet (including the ambiguous I, L, O and U, which we reject rather than guess).
    static func value(of byte: UInt8) -> UInt8? {
        var upper = byte
        if upper >= UInt8(ascii: "a") && upper <= UInt8(ascii: "z") {
            upper -= 32
        }
        return decodeTable[Int(upper)]
    }

    private static let decodeTable: [UInt8?] = {
        var table = [UInt8?](repeating: nil, count: 256)
        for (value, symbol) in alphabet.enumerated() {
            table[Int(symbol)] = UInt8(value)
        }
        return table
    }()
}
