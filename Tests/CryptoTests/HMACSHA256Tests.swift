import Crypto
import TestThreads
import Testing

/// RFC 4231's HMAC-SHA256 test vectors, so the libcrypto binding is known to be the real thing.
@Suite(.ownThreads) struct HMACSHA256Tests {
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined() }

    @Test func rfc4231Case1() throws {
        let tag = try HMACSHA256.tag(Array("Hi There".utf8), key: Array(repeating: 0x0b, count: 20))
        #expect(Self.hex(tag) == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
    }

    @Test func rfc4231Case2() throws {
        let tag = try HMACSHA256.tag(Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8))
        #expect(Self.hex(tag) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func rfc4231Case6KeyLongerThanABlock() throws {
        let tag = try HMACSHA256.tag(Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
                                     key: Array(repeating: 0xaa, count: 131))
        #expect(Self.hex(tag) == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func keysAreRandomAndTheirLength() throws {
        let a = try HMACSHA256.makeKey(), b = try HMACSHA256.makeKey()
        #expect(a.count == HMACSHA256.keyLength && b.count == HMACSHA256.keyLength && a != b)
        #expect(try HMACSHA256.tag([], key: a) != HMACSHA256.tag([], key: b))
    }
}
