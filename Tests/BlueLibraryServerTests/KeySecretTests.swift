import AlbumStoreContract
import Foundation
import Library
import ServerRecords
import TestThreads
import Testing

@testable import BlueLibraryServer

/// The key text (`bl_` + id + `_` + secret): made keys parse back to themselves, and the parser
/// takes nothing else, whatever bytes it is given.
@Suite(.ownThreads)
struct KeySecretTests {
    @Test func aMadeKeyParsesBackAndMatchesOnlyItsOwnHash() throws {
        var ids: Set<String> = []
        for _ in 0..<200 {
            let key = try KeySecret.make()
            #expect(key.text.utf8.count == KeySecret.length && key.text.hasPrefix(key.id + "_"))
            #expect(key.id.utf8.count == KeySecret.idPrefixLength && key.id.hasPrefix("bl_"))
            #expect(KeySecret.parse(key.text) == key)
            #expect(key.matches(key.hash))
            #expect(key.hash.hash.count == 32 && key.hash.algorithm == TokenHash.sha256)
            ids.insert(key.id)
            // One character changed anywhere in the secret: another key, not this one.
            var bytes = Array(key.text.utf8)
            let last = bytes.count - 1
            bytes[last] = bytes[last] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            let other = try #require(KeySecret.parse(String(decoding: bytes, as: UTF8.self)))
            #expect(other.id == key.id && !other.matches(key.hash))
        }
        #expect(ids.count == 200, "ids from 40 random bits do not repeat in 200 keys")
    }

    @Test func base64URLIsRFC4648WithoutPadding() {
        #expect(KeySecret.base64URL([]) == "")
        #expect(KeySecret.base64URL(Array("f".utf8)) == "Zg")
        #expect(KeySecret.base64URL(Array("fo".utf8)) == "Zm8")
        #expect(KeySecret.base64URL(Array("foo".utf8)) == "Zm9v")
        #expect(KeySecret.base64URL(Array("foobar".utf8)) == "Zm9vYmFy")
        #expect(KeySecret.base64URL([0xFB, 0xFF]) == "-_8")
    }

    @Test func theParserTakesOnlyTheKeyShape() {
        let good = "bl_abcdefgh_" + String(repeating: "A", count: 43)
        #expect(KeySecret.parse(good)?.id == "bl_abcdefgh")
        let refused = [
            "", "bl_", "token", "bl_abcdefgh", good + "A", String(good.dropLast()),
            "BL_abcdefgh_" + String(repeating: "A", count: 43),  // the prefix is lower case
            "bl_abcdefg1_" + String(repeating: "A", count: 43),  // 1 is not in base32
            "bl_abcdefgh-" + String(repeating: "A", count: 43),
            "bl_abcdefgh_" + String(repeating: "A", count: 42) + "=",
            "bl_abcdefgh_" + String(repeating: "A", count: 42) + "é",
            "bl_abcdéfgh_" + String(repeating: "A", count: 42),
        ]
        for text in refused { #expect(KeySecret.parse(text) == nil, "\(text.debugDescription)") }
    }

    /// Random bytes, random near-keys: never a crash, and whatever parses has the shape.
    @Test func fuzzedInputNeverCrashesAndOnlyKeyShapesParse() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("bl_abcdefghijklmnopqrstuvwxyz234567ABCXYZ019-_=+/é\u{0}".unicodeScalars)
        for round in 0..<20_000 {
            let text: String
            if round % 2 == 0 {
                let count = Int.random(in: 0...70, using: &generator)
                text = String(String.UnicodeScalarView((0..<count).map { _ in alphabet.randomElement(using: &generator)! }))
            } else {
                // A real key with one byte replaced by any byte (a broken UTF-8 sequence included).
                var bytes = Array(("bl_abcdefgh_" + String(repeating: "q", count: 43)).utf8)
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                text = String(decoding: bytes, as: UTF8.self)
            }
            guard let key = KeySecret.parse(text) else { continue }
            #expect(text.utf8.count == KeySecret.length && key.id.utf8.count == KeySecret.idPrefixLength && text.hasPrefix(key.id + "_"),
                    "\(text.debugDescription)")
        }
    }
}

/// The guard's entry points with whatever a client may send as `Authorization`: never a trap,
/// never a key let in that is not the stored one.
@Suite(.ownThreads)
struct AccessGuardFuzzTests {
    @Test func anyAuthorizationValueIsDecidedWithoutATrap() throws {
        let store = InMemoryServerRecords()
        let settings = try SettingsService(store: store)
        let guardian = try AccessGuard(store: store, settings: settings, clock: { Date() })
        let key = try KeySecret.make()
        try store.saveAccessKey(AccessKey(id: key.id, name: "k", scopes: [.read], createdAt: Date(), secret: key.hash))
        try guardian.reloadKeys()
        #expect(try guardian.check(authorization: "Bearer \(key.text)", client: "192.0.2.1").isAllowed)
        var generator = SystemRandomNumberGenerator()
        let pieces = ["Bearer ", "bearer  ", "Basic ", key.id, key.text, "bl_", "_", "é", "\u{0}", "AAAA", " ", "\u{1F3B5}", "=", "ß"]
        for round in 0..<3_000 {
            var text = ""
            for _ in 0..<Int.random(in: 0...6, using: &generator) { text += pieces.randomElement(using: &generator)! }
            if round % 3 == 0 {
                // The key's own text with one byte replaced: 55 bytes that may break UTF-8 at the id's end.
                var bytes = Array(key.text.utf8)
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0x80...0xFF, using: &generator)
                text = "Bearer " + String(decoding: bytes, as: UTF8.self)
            }
            let client = "198.51.100.\(round % 200)"
            let admitted = guardian.rememberedKey(authorization: text) ?? guardian.verifiedKey(authorization: text)
            if let admitted { #expect(admitted.id == key.id && text.contains(key.text), "\(text.debugDescription)") }
            _ = AccessGuard.presentedKeyID(authorization: text)
            if case let .allowed(allowed)? = try? guardian.check(authorization: text, client: client) {
                #expect(allowed.id == key.id && text.contains(key.text), "\(text.debugDescription)")
            }
        }
    }
}

/// The header's token read from its bytes agrees with the string reading of it.
@Suite(.ownThreads)
struct BearerBytesTests {
    @Test func bytesAndStringReadTheSameToken() {
        let values = ["Bearer abc", "bearer abc", "BEARER   abc  ", "  Bearer\tabc", "Bearer", "Bearer ", "Bearerabc", "Basic abc",
                      "", " ", "Bearer a b", "bearer\u{E9} x", "Bearer bl_abcdefgh_" + String(repeating: "A", count: 43)]
        for value in values {
            var header = value
            let fromBytes = header.withUTF8 { bytes in AccessGuard.bearerBytes(bytes).map { String(decoding: UnsafeBufferPointer(rebasing: $0), as: UTF8.self) } }
            #expect(fromBytes == AccessGuard.bearerToken(value), "\(value.debugDescription)")
        }
    }
}
