import CCrypto

/// HMAC-SHA256 (RFC 2104) from libcrypto: a keyed tag that only the key's holder can make.
public enum HMACSHA256 {
    /// Bytes in a tag.
    public static let tagLength = 32
    /// Bytes in a key made by `makeKey()` (the hash's block-size half is plenty; RFC 2104 §3).
    public static let keyLength = 32

    /// The tag of `message` under `key`.
    public static func tag(_ message: [UInt8], key: [UInt8]) throws(PasswordHash.Failure) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = key.withUnsafeBufferPointer { k in
            message.withUnsafeBufferPointer { m in
                output.withUnsafeMutableBufferPointer { out in
                    HMAC(bl_evp_sha256(), k.baseAddress, Int32(k.count), m.baseAddress, m.count, out.baseAddress, &length)
                }
            }
        }
        guard result != nil, Int(length) == tagLength else { throw PasswordHash.Failure(description: "HMAC-SHA256 failed") }
        return Array(output[..<tagLength])
    }

    /// A new random key.
    public static func makeKey() throws(PasswordHash.Failure) -> [UInt8] {
        try PasswordHash.randomBytes(keyLength)
    }
}
