import Crypto
import TestThreads
import Testing

/// Known answers from FIPS 180-4's examples (NIST CSRC "SHA256.pdf") and the NESSIE set.
@Suite(.ownThreads) struct SHA256Tests {
    private func hex(_ text: String) -> String { SHA256.hex(SHA256.hash(Array(text.utf8))) }

    @Test func emptyInput() {
        #expect(hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func abc() {
        #expect(hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func twoBlockMessage() {
        #expect(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func fourHundredFortyEightBitBoundary() {
        // 112 bytes: padding needs a whole extra block.
        #expect(hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu")
            == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
    }

    @Test func oneMillionA() {
        #expect(SHA256.hex(SHA256.hash([UInt8](repeating: 0x61, count: 1_000_000)))
            == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func rawBytesGiveTheSameDigest() {
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        #expect(bytes.withUnsafeBytes { SHA256.hash($0) } == SHA256.hash(bytes))
        #expect(SHA256.hash(bytes).count == SHA256.digestLength)
    }
}
