/// FNV-1a 64 (<http://www.isthe.com/chongo/tech/comp/fnv/>): a fast, stable, non-cryptographic
/// hash for fingerprints, checksums and entity tags. The one implementation in the project.
///
/// ```swift
/// var hash = FNV1a.offsetBasis
/// FNV1a.update(&hash, with: head)
/// FNV1a.update(&hash, with: body)      // == FNV1a.hash(head + body)
/// let tag = FNV1a.hex(hash)            // 16 lowercase hex digits
/// ```
public enum FNV1a {
    /// The hash of no bytes, where every hash starts.
    public static let offsetBasis: UInt64 = 0xcbf2_9ce4_8422_2325

    /// The 64-bit FNV prime.
    public static let prime: UInt64 = 0x100_0000_01b3

    /// The hash of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> UInt64 {
        var hash = offsetBasis
        update(&hash, with: bytes)
        return hash
    }

    /// Continues `hash` over `bytes`: hashing a message in pieces gives the hash of the whole.
    public static func update(_ hash: inout UInt64, with bytes: [UInt8]) {
        bytes.withUnsafeBytes { update(&hash, with: $0) }
    }

    /// Continues `hash` over raw `bytes`.
    public static func update(_ hash: inout UInt64, with bytes: UnsafeRawBufferPointer) {
        var value = hash
        for byte in bytes {
            value ^= UInt64(byte)
            value &*= prime
        }
        hash = value
    }

    /// `value` as 16 lowercase hex digits.
    public static func hex(_ value: UInt64) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: 16 - text.count) + text
    }
}
