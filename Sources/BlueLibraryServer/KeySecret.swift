import Crypto
import ServerRecords

/// The text of a key the server makes: `bl_` + an 8-character public id + `_` + 43 characters
/// of secret (32 random bytes in unpadded base64url), 55 characters in all, e.g.
/// `bl_k3v9q2xa_Zq0...`. The first 11 characters (`bl_k3v9q2xa`) are the key's id: logs, the
/// access log and the key list name a key by it without revealing it. Only the SHA-256 of the
/// whole text is stored.
struct KeySecret: Sendable, Equatable {
    /// The whole key as the client sends it.
    let text: String
    /// Its public part, `bl_` and 8 characters.
    let id: String

    static let prefix = "bl_"
    static let idLength = 8
    static let secretLength = 43
    static let length = prefix.utf8.count + idLength + 1 + secretLength
    /// The id's length: `bl_` and 8 characters.
    static let idPrefixLength = prefix.utf8.count + idLength
    /// The id's alphabet: lower-case base32 (RFC 4648 letters and digits 2-7), unambiguous to read.
    static let idAlphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)
    static let secretAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// A new key from the system's random source.
    static func make() throws -> KeySecret {
        let idBytes = try PasswordHash.randomBytes(idLength)
        let secretBytes = try PasswordHash.randomBytes(32)
        let id = prefix + String(decoding: idBytes.map { idAlphabet[Int($0 & 31)] }, as: UTF8.self)
        let text = id + "_" + base64URL(secretBytes)
        return KeySecret(text: text, id: id)
    }

    /// The key in `presented`, nil when it does not have the shape of one (then it may be the
    /// passcode of earlier versions). Checks the shape only: whether the key exists and the
    /// secret is right is the guard's question.
    static func parse(_ presented: String) -> KeySecret? {
        let bytes = Array(presented.utf8)
        guard bytes.count == length, bytes.starts(with: prefix.utf8) else { return nil }
        let idEnd = prefix.utf8.count + idLength
        guard bytes[prefix.utf8.count..<idEnd].allSatisfy(idAlphabet.contains), bytes[idEnd] == UInt8(ascii: "_"),
              bytes[(idEnd + 1)...].allSatisfy(secretAlphabet.contains)
        else { return nil }
        return KeySecret(text: presented, id: String(decoding: bytes[..<idEnd], as: UTF8.self))
    }

    /// The stored form: SHA-256 of the whole text.
    var hash: TokenHash {
        TokenHash(algorithm: TokenHash.sha256, salt: [], hash: SHA256.hash(Array(text.utf8)), iterations: 1)
    }

    /// Whether this is the key `stored` was made from (constant time in the digest).
    func matches(_ stored: TokenHash) -> Bool {
        stored.algorithm == TokenHash.sha256 && PasswordHash.constantTimeEquals(SHA256.hash(Array(text.utf8)), stored.hash)
    }

    /// Unpadded base64url (RFC 4648 section 5).
    static func base64URL(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index < bytes.count {
            let chunk = Array(bytes[index..<min(index + 3, bytes.count)])
            let value = (UInt32(chunk[0]) << 16) | (UInt32(chunk.count > 1 ? chunk[1] : 0) << 8) | UInt32(chunk.count > 2 ? chunk[2] : 0)
            let characters = chunk.count + 1
            for position in 0..<characters {
                out.append(secretAlphabet[Int((value >> UInt32(18 - 6 * position)) & 63)])
            }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
