import Essentials

/// The server-side request forgery guard: which addresses the cover fetcher may connect to.
///
/// It is applied to the address curl is about to connect to, after name resolution, on every
/// redirect hop (``CurlCoverFetcher`` refuses the socket in `CURLOPT_OPENSOCKETFUNCTION` and
/// checks again in `CURLOPT_PREREQFUNCTION`), so a public host name that resolves to
/// `127.0.0.1`, or a redirect to `169.254.169.254`, is refused.
///
/// Refused unless allowed: see ``blockedRanges`` (loopback, private, shared, link-local with
/// cloud metadata, unique-local, unspecified, multicast, reserved), plus public-looking
/// IPv6 forms that embed one of them (IPv4-mapped, NAT64, 6to4).
///
/// The allow-list (`BLUELIBRARY_COVER_ALLOW`, comma-separated) opens host names (exact,
/// case-insensitive: every address such a host resolves to is allowed) and address ranges.
/// The `covers.allowList` setting may only narrow it (``narrowed(to:)``), unless the operator
/// starts with `BLUELIBRARY_COVER_ALLOW_FROM_SETTINGS=on`.
public struct CoverAddressPolicy: Sendable, Equatable {
    /// Thrown for an allow-list entry that is neither a CIDR, an address nor a host name.
    public struct InvalidEntry: Error, Sendable, Equatable, CustomStringConvertible {
        public let entry: String
        public init(entry: String) { self.entry = entry }
        public var description: String { "not a host name, address or CIDR range: '\(entry)'" }
    }

    public let allowedHosts: Set<String>
    public let allowedRanges: [IPAddressRange]

    /// Ranges refused unless allowed (IPv4 ranges also match their IPv4-mapped IPv6 form).
    public static let blockedRanges: [IPAddressRange] = [
        "0.0.0.0/8",  // "this network", includes the unspecified 0.0.0.0
        "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",  // private (RFC 1918)
        "100.64.0.0/10",  // shared address space, carrier-grade NAT (RFC 6598)
        "127.0.0.0/8",  // loopback
        "169.254.0.0/16",  // link-local, cloud metadata at 169.254.169.254
        "192.0.0.0/24",  // IETF protocol assignments
        "198.18.0.0/15",  // benchmarking
        "224.0.0.0/4", "240.0.0.0/4",  // multicast; reserved and broadcast
        "::/96",  // unspecified ::, loopback ::1, deprecated IPv4-compatible
        "fc00::/7",  // unique-local
        "fe80::/10",  // link-local
        "fec0::/10",  // old site-local
        "ff00::/8",  // multicast
        "100::/64",  // discard-only
        "64:ff9b:1::/48",  // local-use NAT64 (RFC 8215): translates to anything, internal included
        "::ffff:0:0:0/96",  // IPv4-translated (SIIT, RFC 2765): another spelling of an IPv4 address
    ].map { IPAddressRange($0)! }

    /// Refuses every blocked range; nothing is allowed.
    public init() {
        allowedHosts = []
        allowedRanges = []
    }

    /// A policy opening `entries`: host names, addresses and CIDR ranges.
    /// - Throws: ``InvalidEntry`` for an entry that is none of those.
    public init(allowing entries: [String]) throws(InvalidEntry) {
        var hosts = Set<String>()
        var ranges: [IPAddressRange] = []
        for raw in entries {
            let entry = raw.trimmingWhitespace()
            guard !entry.isEmpty else { continue }
            if let range = Self.range(entry) {
                ranges.append(range)
            } else if Self.isHostName(entry) {
                hosts.insert(entry.lowercased())
            } else {
                throw InvalidEntry(entry: entry)
            }
        }
        allowedHosts = hosts
        allowedRanges = ranges
    }

    /// Parses the comma-separated form (`BLUELIBRARY_COVER_ALLOW=covers.internal,10.1.0.0/16`).
    /// - Throws: ``InvalidEntry`` for the first bad entry.
    public init(allowList: String) throws(InvalidEntry) {
        try self.init(allowing: allowList.split(separator: ",").map(String.init))
    }

    /// The part of this policy that `narrower` also opens: its hosts that `narrower` names, and
    /// the intersections of the two policies' ranges. A host `narrower` names that this policy
    /// does not, or a range outside all of this policy's ranges, opens nothing.
    public func narrowed(to narrower: CoverAddressPolicy) -> CoverAddressPolicy {
        var ranges: [IPAddressRange] = []
        for wanted in narrower.allowedRanges {
            for opened in allowedRanges {
                if let common = opened.intersection(wanted), !ranges.contains(common) { ranges.append(common) }
            }
        }
        return CoverAddressPolicy(hosts: allowedHosts.intersection(narrower.allowedHosts), ranges: ranges)
    }

    /// Whether this policy already opens everything `entry` (a host, address or CIDR) would open.
    /// - Throws: ``InvalidEntry`` for an entry that is none of those.
    public func opens(entry raw: String) throws(InvalidEntry) -> Bool {
        let entry = raw.trimmingWhitespace()
        if let range = Self.range(entry) { return allowedRanges.contains { $0.contains(range) } }
        guard Self.isHostName(entry) else { throw InvalidEntry(entry: entry) }
        return allowedHosts.contains(entry.lowercased())
    }

    private init(hosts: Set<String>, ranges: [IPAddressRange]) {
        allowedHosts = hosts
        allowedRanges = ranges
    }

    /// Whether the fetcher may connect to `address` while fetching from `host` (the URL's host
    /// of this hop, lower-cased).
    public func permits(_ address: IPAddress, host: String) -> Bool {
        if allowedHosts.contains(host) { return true }
        if allowedRanges.contains(where: { $0.contains(address) }) { return true }
        return !Self.isBlocked(address)
    }

    /// Whether `address` lies in a blocked range, also when embedded in NAT64 (`64:ff9b::/96`)
    /// or 6to4 (`2002::/16`) form.
    public static func isBlocked(_ address: IPAddress) -> Bool {
        if blockedRanges.contains(where: { $0.contains(address) }) { return true }
        if address.high == 0x0064_FF9B_0000_0000, address.low >> 32 == 0 {  // 64:ff9b::a.b.c.d
            return isBlocked(IPAddress(ipv4: UInt32(truncatingIfNeeded: address.low)))
        }
        if address.high >> 48 == 0x2002 {  // 2002:aabb:ccdd::/48 embeds a.b.c.d
            return isBlocked(IPAddress(ipv4: UInt32(truncatingIfNeeded: address.high >> 16)))
        }
        return false
    }

    /// An allow-list entry as a range: an address or CIDR, whose address may be written in
    /// brackets as in a URL (`[fd00::1]`, `[fd00::]/8`).
    static func range(_ entry: String) -> IPAddressRange? {
        if entry.hasPrefix("["), let close = entry.firstIndex(of: "]") {
            let address = entry[entry.index(after: entry.startIndex)..<close]
            let rest = entry[entry.index(after: close)...]
            guard !address.contains("/"), rest.isEmpty || rest.hasPrefix("/") else { return nil }
            return IPAddressRange(String(address) + rest)
        }
        return IPAddressRange(entry)
    }

    /// Letters, digits, hyphens and dots, as DNS names are written (RFC 1123 §2.1).
    static func isHostName(_ text: String) -> Bool {
        guard text.utf8.count <= 253, !text.hasPrefix("."), !text.hasPrefix("-") else { return false }
        return text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2D || byte == 0x2E
        }
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var view = Substring(self)
        while let first = view.first, first == " " || first == "\t" { view = view.dropFirst() }
        while let last = view.last, last == " " || last == "\t" { view = view.dropLast() }
        return String(view)
    }
}
