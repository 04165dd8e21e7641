#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address as a value: 16 bytes in two words, IPv4 held in its IPv4-mapped
/// IPv6 form (`::ffff:a.b.c.d`, RFC 4291 §2.5.5.2), so that one range check covers both
/// spellings and an IPv4 client of a dual-stack socket is the same address as over IPv4.
///
/// Parse it once (at accept, from configuration) and compare it by masking: no allocation.
/// Its text form is made only when asked for (`description`, for logs).
///
/// ```swift
/// let peer = IPAddress("192.0.2.7")!
/// IPAddressRange("192.0.2.0/24")!.contains(peer)  // true
/// peer.description                                // "192.0.2.7"
/// ```
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// Bytes 0–7 of the 16-byte form, the first byte in the most significant bits.
    public let high: UInt64
    /// Bytes 8–15 of the 16-byte form.
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// `::`, the unspecified address (RFC 4291 §2.5.2).
    public static let unspecified = IPAddress(high: 0, low: 0)

    /// The IPv4 address `a.b.c.d` given as the number `a << 24 | b << 16 | c << 8 | d`.
    /// 127.0.0.1.
    public static let loopback = IPAddress(ipv4: 0x7F00_0001)

    public init(ipv4 value: UInt32) {
        self.init(high: 0, low: 0xFFFF_0000_0000 | UInt64(value))
    }

    /// The 4 bytes of an IPv4 address.
    public init?(ipv4 bytes: some Collection<UInt8>) {
        guard bytes.count == 4 else { return nil }
        self.init(ipv4: bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
    }

    /// 16 bytes of an IPv6 address (an IPv4-mapped one counts as IPv4).
    public init?(ipv6 bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in bytes.enumerated() {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.init(high: high, low: low)
    }

    /// Parses textual IPv4 (`192.0.2.1`) or IPv6 (`2001:db8::1`, `::ffff:192.0.2.1`) as
    /// `inet_pton(3)` does: no brackets, no port, no zone, no leading or trailing space.
    public init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self.init(ipv4: UInt32(bigEndian: v4.s_addr))
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            self.init(v6)
            return
        }
        return nil
    }

    /// The address in a `sockaddr_in` or `sockaddr_in6` (as `accept` gives it); nil for other
    /// families.
    public init?(socketAddress: UnsafePointer<sockaddr>) {
        switch Int32(socketAddress.pointee.sa_family) {
        case AF_INET:
            let address = UnsafeRawPointer(socketAddress).loadUnaligned(as: sockaddr_in.self)
            self.init(ipv4: UInt32(bigEndian: address.sin_addr.s_addr))
        case AF_INET6:
            let address = UnsafeRawPointer(socketAddress).loadUnaligned(as: sockaddr_in6.self)
            self.init(address.sin6_addr)
        default:
            return nil
        }
    }

    private init(_ address: in6_addr) {
        var high: UInt64 = 0
        var low: UInt64 = 0
        withUnsafeBytes(of: address) { raw in
            for index in 0..<8 { high = high << 8 | UInt64(raw[index]) }
            for index in 8..<16 { low = low << 8 | UInt64(raw[index]) }
        }
        self.init(high: high, low: low)
    }

    /// Whether this is an IPv4 address (stored IPv4-mapped).
    public var isIPv4: Bool { high == 0 && low >> 32 == 0xFFFF }

    /// The 16 bytes, in network order.
    public var bytes: [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64($0))) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64($0))) }
    }

    /// Dotted decimal for IPv4 (also when it came IPv4-mapped), RFC 5952 text for IPv6.
    public var description: String {
        if isIPv4 { return Self.dottedDecimal(UInt32(truncatingIfNeeded: low)) }
        var raw = in6_addr()
        withUnsafeMutableBytes(of: &raw) { raw in
            for index in 0..<8 { raw[index] = UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64(index))) }
            for index in 0..<8 { raw[8 + index] = UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64(index))) }
        }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN)) { buffer in
            guard let text = inet_ntop(AF_INET6, &raw, buffer.baseAddress, socklen_t(buffer.count)) else { return "?" }
            return String(cString: text)
        }
    }

    /// `a.b.c.d` written straight into the string's storage (at most 15 bytes: a small
    /// string, no allocation).
    private static func dottedDecimal(_ value: UInt32) -> String {
        String(unsafeUninitializedCapacity: 15) { buffer in
            var count = 0
            for shift in stride(from: 24, through: 0, by: -8) {
                let octet = Int(truncatingIfNeeded: value >> UInt32(shift)) & 0xFF
                if octet >= 100 { buffer[count] = UInt8(ascii: "0") + UInt8(octet / 100); count += 1 }
                if octet >= 10 { buffer[count] = UInt8(ascii: "0") + UInt8(octet / 10 % 10); count += 1 }
                buffer[count] = UInt8(ascii: "0") + UInt8(octet % 10)
                count += 1
                if shift > 0 { buffer[count] = UInt8(ascii: "."); count += 1 }
            }
            return count
        }
    }
}

/// A range of addresses in CIDR notation (`10.0.0.0/8`, `fc00::/7`); a bare address is a /32
/// (IPv4) or /128 (IPv6). Trusted proxies and the cover fetcher's address policy use it.
///
/// Ranges either nest or are disjoint, so the intersection of two is the narrower one or
/// nothing.
public struct IPAddressRange: Sendable, Hashable, CustomStringConvertible {
    /// The network, masked to the prefix, in the 16-byte form of ``IPAddress``.
    private let network: IPAddress
    /// The prefix length over the 16-byte form (an IPv4 /8 is 104 here).
    private let prefixLength: Int
    /// The range as it was written.
    public let description: String

    /// Parses `address` or `address/prefix` (an IPv4 prefix 0–32, an IPv6 one 0–128, also for
    /// an IPv4-mapped address written in IPv6 form, e.g. `::ffff:10.0.0.0/104`). The address is
    /// read as ``IPAddress/init(_:)`` reads it (no brackets).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2, let address = IPAddress(String(parts[0])) else { return nil }
        let isV4 = !parts[0].contains(":")  // how it is written, not what it maps to
        var prefix = isV4 ? 32 : 128
        if parts.count == 2 {
            guard let value = Int(parts[1]), value >= 0, value <= prefix else { return nil }
            prefix = value
        }
        prefixLength = isV4 ? prefix + 96 : prefix
        network = Self.mask(address, prefixLength)
        description = text
    }

    /// Whether `address` lies in this range.
    public func contains(_ address: IPAddress) -> Bool {
        Self.mask(address, prefixLength) == network
    }

    /// Whether every address of `other` lies in this range.
    public func contains(_ other: IPAddressRange) -> Bool {
        prefixLength <= other.prefixLength && Self.mask(other.network, prefixLength) == network
    }

    /// The addresses in both ranges: the narrower of the two, or nil.
    public func intersection(_ other: IPAddressRange) -> IPAddressRange? {
        if contains(other) { return other }
        if other.contains(self) { return self }
        return nil
    }

    private static func mask(_ address: IPAddress, _ prefix: Int) -> IPAddress {
        let all = UInt64.max
        let high = prefix >= 64 ? all : (prefix <= 0 ? 0 : all << UInt64(64 - prefix))
        let low = prefix >= 128 ? all : (prefix <= 64 ? 0 : all << UInt64(128 - prefix))
        return IPAddress(high: address.high & high, low: address.low & low)
    }
}

extension Sequence where Element == IPAddressRange {
    /// Whether any of the ranges contains `address`.
    public func containsAddress(_ address: IPAddress) -> Bool {
        contains { $0.contains(address) }
    }
}
