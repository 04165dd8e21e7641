#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address range (`10.0.0.0/8`, `::1/128`); a bare address is a /32 or /128.
public struct CIDR: Sendable, Equatable, CustomStringConvertible {
    /// The address as 16 bytes (IPv4 mapped into `::ffff:0:0/96`).
    let network: [UInt8]
    let prefixLength: Int
    public let description: String

    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2, let bytes = CIDR.parseAddress(String(parts[0])) else { return nil }
        let isV4 = bytes.isV4
        var prefix = isV4 ? 32 : 128
        if parts.count == 2 {
            guard let p = Int(parts[1]), p >= 0, p <= prefix else { return nil }
            prefix = p
        }
        prefixLength = isV4 ? prefix + 96 : prefix
        network = CIDR.mask(bytes.bytes, prefixLength)
        description = text
    }

    /// Whether `address` (textual IPv4 or IPv6) lies in this range.
    public func contains(_ address: String) -> Bool {
        guard let parsed = CIDR.parseAddress(address) else { return false }
        return CIDR.mask(parsed.bytes, prefixLength) == network
    }

    static func mask(_ bytes: [UInt8], _ prefix: Int) -> [UInt8] {
        var result = bytes
        for i in 0..<16 {
            let bitsHere = max(0, min(8, prefix - i * 8))
            result[i] &= bitsHere == 0 ? 0 : UInt8(truncatingIfNeeded: 0xFF << (8 - bitsHere))
        }
        return result
    }

    static func parseAddress(_ text: String) -> (bytes: [UInt8], isV4: Bool)? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            let raw = withUnsafeBytes(of: v4.s_addr) { Array($0) }
            return ([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] + raw, true)
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return (withUnsafeBytes(of: v6) { Array($0) }, false)
        }
        return nil
    }
}

extension Array where Element == CIDR {
    func containsAddress(_ address: String) -> Bool { contains { $0.contains(address) } }
}
