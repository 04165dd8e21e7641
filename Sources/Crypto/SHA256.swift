import CCrypto

/// SHA-256 (FIPS 180-4) from libcrypto. Names cover cache files after their URL and gives
/// cached bytes a content `ETag`; pinned by known-answer tests.
///
/// ```swift
/// let digest = SHA256.hash(Array("abc".utf8))
/// let hex = SHA256.hex(digest)   // "ba7816bf…"
/// ```
public enum SHA256 {
    /// Bytes in a digest.
    public static let digestLength = 32

    /// The digest of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { hash($0) }
    }

    /// The digest of raw `bytes`.
    ///
    /// libcrypto's one-shot digest fails only when it cannot allocate its context; that is
    /// treated like any other allocation failure (the process stops), not as a thrown error.
    public static func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = digest.withUnsafeMutableBufferPointer { out in
            EVP_Digest(bytes.baseAddress, bytes.count, out.baseAddress, &length, bl_evp_sha256(), nil)
        }
        precondition(result == 1 && Int(length) == digestLength, "libcrypto could not compute SHA-256")
        digest.removeLast(digest.count - digestLength)
        return digest
    }

    /// Lower-case hexadecimal of `digest` (64 characters for SHA-256).
    public static func hex(_ digest: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(digest.count * 2)
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
