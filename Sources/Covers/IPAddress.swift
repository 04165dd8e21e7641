#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address as 16 bytes; IPv4 is held in its IPv4-mapped IPv6 form
/// (`::ffff:a.b.c.d`, RFC 4291 §2.5.5.2), so one range check covers both spellings.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// 16 bytes of an IPv6 address (an IPv4-mapped one counts as IPv4).
    public init?(ipv6 bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// The 4 bytes of an IPv4 address.
    public init?(ipv4 bytes: [UInt8]) {
        guard bytes.count == 4 else { return nil }
        self.bytes = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] + bytes
    }

    /// Parses textual IPv4 (`192.0.2.1`) or IPv6 (`2001:db8::1`, brackets allowed).
    public init?(_ text: String) {
        var text = text
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self.init(ipv4: withUnsafeBytes(of: v4.s_addr) { Array($0) })
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            self.init(ipv6: withUnsafeBytes(of: v6) { Array($0) })
            return
        }
        return nil
    }

    /// The address in a `sockaddr_in` or `sockaddr_in6`; nil for other families.
    public init?(socketAddress: UnsafePointer<sockaddr>) {
        switch Int32(socketAddress.pointee.sa_family) {
        case AF_INET:
            let address = UnsafeRawPointer(socketAddress).loadUnaligned(as: sockaddr_in.self)
            self.init(ipv4: withUnsafeBytes(of: address.sin_addr.s_addr) { Array($0) })
        case AF_INET6:
            let address = UnsafeRawPointer(socketAddress).loadUnaligned(as: sockaddr_in6.self)
            self.init(ipv6: withUnsafeBytes(of: address.sin6_addr) { Array($0) })
        default:
            return nil
        }
    }

    /// Whether this is an IPv4 address (stored IPv4-mapped).
    public var isIPv4: Bool { bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF }

    public var description: String {
        if isIPv4 { return bytes[12..<16].map(String.init).joined(separator: ".") }
        var raw = in6_addr()
        withUnsafeMutableBytes(of: &raw) { $0.copyBytes(from: bytes) }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &raw, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A range of addresses (`10.0.0.0/8`, `fc00::/7`); a bare address is a /32 or /128.
public struct IPAddressRange: Sendable, Hashable, CustomStringConvertible {
    /// The network, masked, in the 16-byte form of ``IPAddress``.
    private let network: [UInt8]
    /// Prefix length over the 16-byte form (an IPv4 /8 is 104 here).
    private let prefixLength: Int
    public let description: String

    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2, let address = IPAddress(String(parts[0])) else { return nil }
        let isV4 = address.isIPv4
        var prefix = isV4 ? 32 : 128
        if parts.count == 2 {
            guard let value = Int(parts[1]), value >= 0, value <= prefix else { return nil }
            prefix = value
        }
        prefixLength = isV4 ? prefix + 96 : prefix
        network = Self.mask(address.bytes, prefixLength)
        description = text
    }

    public func contains(_ address: IPAddress) -> Bool {
        Self.mask(address.bytes, prefixLength) == network
    }

    /// Whether every address of `other` lies in this range.
    public func contains(_ other: IPAddressRange) -> Bool {
        prefixLength <= other.prefixLength && Self.mask(other.network, prefixLength) == network
    }

    /// The addresses in both ranges: CIDR ranges either nest or are disjoint, so this is the
    /// narrower of the two, or nil.
    public func intersection(_ other: IPAddressRange) -> IPAddressRange? {
        if contains(other) { return other }
        if other.contains(self) { return self }
        return nil
    }

    private static func mask(_ bytes: [UInt8], _ prefix: Int) -> [UInt8] {
        var result = bytes
        for index in 0..<16 {
            let bits = max(0, min(8, prefix - index * 8))
            result[index] &= bits == 0 ? 0 : UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
        }
        return result
    }
}
