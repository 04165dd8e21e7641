/// SHA-256 (FIPS 180-4, <https://csrc.nist.gov/pubs/fips/180-4/upd1/final>), written here
/// because Linux has no CryptoKit. Used to name cache files after their URL and to give
/// cached bytes a content `ETag`; pinned by known-answer tests.
///
/// ```swift
/// var hasher = SHA256()
/// hasher.update(Array("abc".utf8))
/// let hex = SHA256.hex(hasher.finalize())   // "ba7816bf…"
/// ```
public struct SHA256: Sendable {
    private static let roundConstants: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    private var state: [UInt32] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    ]
    /// Bytes not yet forming a whole 64-byte block.
    private var pending: [UInt8] = []
    private var totalLength: UInt64 = 0

    public init() {
        pending.reserveCapacity(64)
    }

    /// The digest of `bytes` in one call.
    public static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// Lower-case hexadecimal of `digest` (64 characters for SHA-256).
    public static func hex(_ digest: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(digest.count * 2)
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    public mutating func update(_ bytes: some Collection<UInt8>) {
        totalLength &+= UInt64(bytes.count)
        var index = bytes.startIndex
        if !pending.isEmpty {
            while pending.count < 64, index != bytes.endIndex {
                pending.append(bytes[index])
                index = bytes.index(after: index)
            }
            guard pending.count == 64 else { return }
            let block = pending
            pending.removeAll(keepingCapacity: true)
            block.withUnsafeBufferPointer { compress(UnsafeRawBufferPointer($0)) }
        }
        let rest = bytes[index...]
        let handled = rest.withContiguousStorageIfAvailable { buffer -> Bool in
            var offset = 0
            while buffer.count - offset >= 64 {
                compress(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: buffer[offset..<offset + 64])))
                offset += 64
            }
            pending.append(contentsOf: buffer[offset...])
            return true
        }
        if handled == nil {
            for byte in rest {
                pending.append(byte)
                if pending.count == 64 {
                    let block = pending
                    pending.removeAll(keepingCapacity: true)
                    block.withUnsafeBufferPointer { compress(UnsafeRawBufferPointer($0)) }
                }
            }
        }
    }

    /// The 32-byte digest. Padding: a 1 bit, zeros up to 56 mod 64, then the length in bits.
    public consuming func finalize() -> [UInt8] {
        let bitLength = totalLength &* 8
        var tail = pending
        tail.append(0x80)
        while tail.count % 64 != 56 { tail.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        tail.withUnsafeBufferPointer { buffer in
            var offset = 0
            while offset < buffer.count {
                compress(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: buffer[offset..<offset + 64])))
                offset += 64
            }
        }
        var digest: [UInt8] = []
        digest.reserveCapacity(32)
        for word in state {
            digest.append(UInt8(truncatingIfNeeded: word >> 24))
            digest.append(UInt8(truncatingIfNeeded: word >> 16))
            digest.append(UInt8(truncatingIfNeeded: word >> 8))
            digest.append(UInt8(truncatingIfNeeded: word))
        }
        return digest
    }

    private mutating func compress(_ block: UnsafeRawBufferPointer) {
        var w = [UInt32](repeating: 0, count: 64)
        for i in 0..<16 {
            w[i] = UInt32(block[i * 4]) << 24 | UInt32(block[i * 4 + 1]) << 16 | UInt32(block[i * 4 + 2]) << 8
                | UInt32(block[i * 4 + 3])
        }
        for i in 16..<64 {
            let s0 = w[i - 15].rotatedRight(7) ^ w[i - 15].rotatedRight(18) ^ (w[i - 15] >> 3)
            let s1 = w[i - 2].rotatedRight(17) ^ w[i - 2].rotatedRight(19) ^ (w[i - 2] >> 10)
            w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
        }
        var a = state[0], b = state[1], c = state[2], d = state[3]
        var e = state[4], f = state[5], g = state[6], h = state[7]
        for i in 0..<64 {
            let s1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
            let choice = (e & f) ^ (~e & g)
            let temp1 = h &+ s1 &+ choice &+ Self.roundConstants[i] &+ w[i]
            let s0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
            let majority = (a & b) ^ (a & c) ^ (b & c)
            let temp2 = s0 &+ majority
            h = g
            g = f
            f = e
            e = d &+ temp1
            d = c
            c = b
            b = a
            a = temp1 &+ temp2
        }
        state[0] &+= a
        state[1] &+= b
        state[2] &+= c
        state[3] &+= d
        state[4] &+= e
        state[5] &+= f
        state[6] &+= g
        state[7] &+= h
    }
}

extension UInt32 {
    fileprivate func rotatedRight(_ count: UInt32) -> UInt32 {
        (self >> count) | (self << (32 - count))
    }
}
