import Essentials
import TestThreads
import Testing

@Suite(.ownThreads) struct FNV1aTests {
    /// Reference values from the FNV authors' test suite (64-bit FNV-1a).
    @Test func matchesReferenceVectors() {
        #expect(FNV1a.hash([]) == 0xcbf2_9ce4_8422_2325)
        #expect(FNV1a.hash(Array("a".utf8)) == 0xaf63_dc4c_8601_ec8c)
        #expect(FNV1a.hash(Array("foobar".utf8)) == 0x8594_4171_f739_67e8)
    }

    @Test func hashingInPiecesGivesTheHashOfTheWhole() {
        var hash = FNV1a.offsetBasis
        FNV1a.update(&hash, with: Array("foo".utf8))
        FNV1a.update(&hash, with: Array("bar".utf8))
        #expect(hash == FNV1a.hash(Array("foobar".utf8)))
    }

    @Test func hexIsSixteenLowercaseDigits() {
        #expect(FNV1a.hex(0xab) == "00000000000000ab")
        #expect(FNV1a.hex(0x8594_4171_f739_67e8) == "85944171f73967e8")
    }
}
