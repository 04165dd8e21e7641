/// How cursors are sealed: a keyed tag appended to the payload, checked before the payload is
/// read. The server passes an HMAC-SHA256 under a random key kept in the database, so cursors
/// survive a restart and every instance sharing the database accepts them; nobody without
/// the key can make one. (The domain has no cryptography of its own: the tag comes in.)
public struct CursorSeal: Sendable {
    /// Bytes in every tag.
    public let tagLength: Int
    private let tagFunction: @Sendable ([UInt8]) -> [UInt8]

    /// Text mixed into every tagged message, so a tag made for a cursor means nothing elsewhere
    /// if the key is ever used for more than cursors.
    static let context = Array("bluelibrary.cursor.v2\u{0}".utf8)

    /// - Parameters:
    ///   - tagLength: the length of every tag `tag` returns.
    ///   - tag: the keyed tag of a message (a tag of another length never verifies).
    public init(tagLength: Int, tag: @escaping @Sendable ([UInt8]) -> [UInt8]) {
        self.tagLength = tagLength
        self.tagFunction = tag
    }

    func tag(_ payload: [UInt8]) -> [UInt8] {
        tagFunction(Self.context + payload)
    }

    /// Whether `tag` is `payload`'s, compared in constant time.
    func verify(_ payload: [UInt8], tag: [UInt8]) -> Bool {
        let expected = self.tag(payload)
        guard expected.count == tagLength, tag.count == tagLength else { return false }
        var difference: UInt8 = 0
        for i in 0..<tagLength { difference |= expected[i] ^ tag[i] }
        return difference == 0
    }
}
