/// A server-assigned album id: opaque, URL-safe and stable for the album's whole life.
///
/// Shape (ULID, <https://github.com/ulid/spec>): 26 symbols of Crockford base32 encoding
/// 128 bits — a 48-bit Unix time in milliseconds followed by 80 random bits. Ids therefore
/// sort (as strings) by creation time, need no coordination between replicas, and are unique
/// across libraries.
///
/// Rules when parsing text from a path or a document (`init?(_:)`):
/// - exactly 26 symbols of the alphabet; lower case is accepted and normalised to upper case,
///   so the canonical spelling is the one the server hands out;
/// - the first symbol is `0`…`7`, because 26 × 5 = 130 bits and the top two must be zero.
public struct AlbumID: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// The canonical (upper-case) text of the id.
    public let rawValue: String

    /// The number of symbols in every id.
    public static let length = 26

    /// Parses and validates an id; `nil` when `text` is not a well-formed ULID.
    public init?(_ text: some StringProtocol) {
        var text = String(text)
        guard text.utf8.count == Self.length else { return nil }
        // Usually the text is already canonical (ids come back as the server wrote them) and
        // is kept as it is; otherwise it is rewritten in upper case.
        let isCanonical = text.withUTF8 { bytes -> Bool? in
            var isCanonical = true
            for position in 0..<bytes.count {
                guard let value = CrockfordBase32.value(of: bytes[position]), position > 0 || value <= 7 else { return nil }
                if CrockfordBase32.alphabet[Int(value)] != bytes[position] { isCanonical = false }
            }
            return isCanonical
        }
        switch isCanonical {
        case nil:
            return nil
        case true?:
            self.rawValue = text
        case false?:
            self.rawValue = String(decoding: text.utf8.map { CrockfordBase32.alphabet[Int(CrockfordBase32.value(of: $0)!)] }, as: UTF8.self)
        }
    }

    /// Builds an id from its 128 bits: `high` holds the 48-bit millisecond time in its top
    /// bits and the first 16 random bits in its low bits; `low` holds the other 64 random bits.
    init(high: UInt64, low: UInt64) {
        var symbols = [UInt8]()
        symbols.reserveCapacity(Self.length)
        for position in 0..<Self.length {
            let shift = 5 * (Self.length - 1 - position)
            symbols.append(CrockfordBase32.alphabet[Int(Self.fiveBits(high: high, low: low, shift: shift))])
        }
        self.rawValue = String(decoding: symbols, as: UTF8.self)
    }

    /// Parses an id, throwing a message that says what a valid id looks like.
    ///
    /// - Throws: `LibraryError.invalidAlbumID` when `text` is not a well-formed id.
    public static func parse(_ text: String) throws(LibraryError) -> AlbumID {
        guard let id = AlbumID(text) else { throw .invalidAlbumID(text) }
        return id
    }

    /// The creation time the id carries, in milliseconds since 1970.
    public var timestampMilliseconds: UInt64 {
        var value: UInt64 = 0
        for byte in rawValue.utf8.prefix(10) {
            value = value << 5 | UInt64(CrockfordBase32.value(of: byte) ?? 0)
        }
        return value
    }

    public var description: String { rawValue }

    public static func < (lhs: AlbumID, rhs: AlbumID) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = AlbumID(text) else {
            throw DecodingError.dataCorrupted(.init(
                codingPath: decoder.codingPath,
                debugDescription: LibraryError.invalidAlbumID(text).message))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// Five bits of the 128-bit number `high:low` starting at bit `shift` (bits above 127 are 0).
    private static func fiveBits(high: UInt64, low: UInt64, shift: Int) -> UInt64 {
        if shift >= 64 {
            return (high >> UInt64(shift - 64)) & 31
        }
        if shift + 5 <= 64 {
            return (low >> UInt64(shift)) & 31
        }
        return ((low >> UInt64(shift)) | (high << UInt64(64 - shift))) & 31
    }
}
