import CCrypto

/// PBKDF2-HMAC-SHA256 and secure random bytes from libcrypto, and a constant-time compare.
///
/// The only module that touches OpenSSL; it knows nothing about albums or HTTP.
public enum PasswordHash {
    /// The cost used for new hashes (OWASP's 2023 floor for PBKDF2-HMAC-SHA256 is 600,000;
    /// at least 100,000 is required here).
    public static let defaultIterations = 210_000
    public static let minimumIterations = 100_000
    public static let saltLength = 16
    public static let hashLength = 32

    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// `length` bytes of PBKDF2-HMAC-SHA256 of `password` with `salt`.
    public static func pbkdf2SHA256(password: [UInt8], salt: [UInt8], iterations: Int, length: Int = hashLength) throws(Failure) -> [UInt8] {
        guard iterations >= 1, iterations <= Int(Int32.max), length > 0 else {
            throw Failure(description: "invalid PBKDF2 parameters")
        }
        var output = [UInt8](repeating: 0, count: length)
        let chars = password.map { CChar(bitPattern: $0) }
        let ok = chars.withUnsafeBufferPointer { pw in
            salt.withUnsafeBufferPointer { s in
                output.withUnsafeMutableBufferPointer { out in
                    PKCS5_PBKDF2_HMAC(pw.baseAddress, Int32(pw.count), s.baseAddress, Int32(s.count),
                                      Int32(iterations), bl_evp_sha256(), Int32(length), out.baseAddress)
                }
            }
        }
        guard ok == 1 else { throw Failure(description: "PKCS5_PBKDF2_HMAC failed") }
        return output
    }

    /// `count` bytes from OpenSSL's CSPRNG.
    public static func randomBytes(_ count: Int) throws(Failure) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let ok = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32($0.count)) }
        guard ok == 1 else { throw Failure(description: "RAND_bytes failed") }
        return bytes
    }

    /// Equality that takes the same time wherever the first difference is (lengths are not
    /// secret: every stored hash has the same length).
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in a.indices { difference |= a[i] ^ b[i] }
        return difference == 0
    }

    /// A new salt and hash for `token`.
    public static func make(token: [UInt8], iterations: Int = defaultIterations) throws(Failure) -> (salt: [UInt8], hash: [UInt8], iterations: Int) {
        let iterations = max(iterations, minimumIterations)
        let salt = try randomBytes(saltLength)
        return (salt, try pbkdf2SHA256(password: token, salt: salt, iterations: iterations), iterations)
    }

    /// Whether `token` hashes to `hash` with `salt` and `iterations` (constant-time compare).
    public static func verify(token: [UInt8], salt: [UInt8], hash: [UInt8], iterations: Int) -> Bool {
        guard let computed = try? pbkdf2SHA256(password: token, salt: salt, iterations: iterations, length: hash.count) else {
            return false
        }
        return constantTimeEquals(computed, hash)
    }
}
