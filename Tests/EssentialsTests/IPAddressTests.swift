import Essentials
import TestThreads
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite(.ownThreads) struct IPAddressTests {
    @Test func aMappedRangeWrittenInIPv6FormTakesAnIPv6Prefix() throws {
        let range = try #require(IPAddressRange("::ffff:10.0.0.0/104"))
        #expect(range.contains(try #require(IPAddress("10.1.2.3"))))
        #expect(!range.contains(try #require(IPAddress("11.0.0.1"))))
        #expect(IPAddressRange("::ffff:0:0/96") != nil)
        #expect(IPAddressRange("10.0.0.0/33") == nil)
    }

    @Test func parsesIPv4AndIPv6AsInetPtonDoes() throws {
        let v4 = try #require(IPAddress("192.0.2.7"))
        #expect(v4.isIPv4)
        #expect(v4 == IPAddress(ipv4: 0xC000_0207))
        #expect(v4.bytes == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 192, 0, 2, 7])

        let v6 = try #require(IPAddress("2001:db8::1"))
        #expect(!v6.isIPv4)
        #expect(v6.high == 0x2001_0DB8_0000_0000 && v6.low == 1)
        #expect(IPAddress(ipv6: v6.bytes) == v6)

        // IPv4-mapped IPv6 is the IPv4 address (a dual-stack socket's IPv4 client).
        #expect(IPAddress("::ffff:192.0.2.7") == v4)
        #expect(IPAddress(ipv4: [192, 0, 2, 7]) == v4)

        for bad in ["", " 192.0.2.7", "192.0.2.7 ", "192.0.2", "256.0.0.1", "192.0.2.7:80", "[::1]", "::1%eth0",
                    "2001:db8::1::2", "localhost", "10.0.0.0/8", "1.2.3.4.5"] {
            #expect(IPAddress(bad) == nil, "\(bad)")
        }
        #expect(IPAddress(ipv4: [1, 2, 3]) == nil)
        #expect(IPAddress(ipv6: [UInt8](repeating: 0, count: 15)) == nil)
    }

    @Test func formatsDottedDecimalAndRFC5952() {
        let cases: [(String, String)] = [
            ("0.0.0.0", "0.0.0.0"), ("255.255.255.255", "255.255.255.255"), ("10.20.3.100", "10.20.3.100"),
            ("127.0.0.1", "127.0.0.1"), ("::ffff:10.0.0.9", "10.0.0.9"),
            ("::", "::"), ("::1", "::1"), ("2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"),
            ("FD12:3456::ABCD", "fd12:3456::abcd"), ("64:ff9b::192.0.2.1", "64:ff9b::c000:201"),
        ]
        for (text, formatted) in cases {
            #expect(IPAddress(text)?.description == formatted, "\(text)")
        }
    }

    @Test func everyIPv4AddressRoundTripsThroughItsText() {
        var state: UInt32 = 0x2545_F491
        for _ in 0..<10_000 {
            state = state &* 1_664_525 &+ 1_013_904_223
            let address = IPAddress(ipv4: state)
            #expect(IPAddress(address.description) == address, "\(address)")
        }
    }

    @Test func readsSocketAddressesAsAcceptGivesThem() throws {
        var v4 = sockaddr_in()
        v4.sin_family = sa_family_t(AF_INET)
        v4.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let fromV4 = withUnsafePointer(to: &v4) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { IPAddress(socketAddress: $0) }
        }
        #expect(fromV4 == IPAddress("127.0.0.1"))

        var v6 = sockaddr_in6()
        v6.sin6_family = sa_family_t(AF_INET6)
        withUnsafeMutableBytes(of: &v6.sin6_addr) { raw in
            raw.copyBytes(from: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 1, 2, 3] as [UInt8])
        }
        let fromV6 = withUnsafePointer(to: &v6) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { IPAddress(socketAddress: $0) }
        }
        #expect(fromV6 == IPAddress("10.1.2.3"))
        #expect(fromV6?.description == "10.1.2.3")

        var unix = sockaddr()
        unix.sa_family = sa_family_t(AF_UNIX)
        #expect(withUnsafePointer(to: &unix) { IPAddress(socketAddress: $0) } == nil)
    }
}

@Suite(.ownThreads) struct IPAddressRangeTests {
    func contains(_ range: String, _ address: String) throws -> Bool {
        try #require(IPAddressRange(range)).contains(try #require(IPAddress(address)))
    }

    @Test func ipv4RangesMatchTheirAddressesOnly() throws {
        #expect(try contains("10.1.0.0/16", "10.1.200.3"))
        #expect(try !contains("10.1.0.0/16", "10.2.0.1"))
        #expect(try contains("10.1.0.0/16", "::ffff:10.1.0.9"))  // IPv4-mapped IPv6
        #expect(try contains("10.1.2.3/13", "10.7.255.255"))  // the host bits of the range are masked off
        #expect(try !contains("10.1.2.3/13", "10.8.0.0"))
        // An IPv4 /0 is every IPv4 address, and no other.
        #expect(try contains("0.0.0.0/0", "203.0.113.9"))
        #expect(try !contains("0.0.0.0/0", "2001:db8::1"))
    }

    @Test func bareAddressesAndIPv6() throws {
        #expect(try contains("127.0.0.1", "127.0.0.1"))
        #expect(try !contains("127.0.0.1", "127.0.0.2"))
        #expect(try contains("fd00::/8", "fd12:3456::1"))
        #expect(try !contains("fd00::/8", "fe80::1"))
        #expect(try contains("::/0", "203.0.113.9"))
        #expect(try contains("2001:db8::/127", "2001:db8::1"))
        #expect(try !contains("2001:db8::/128", "2001:db8::1"))
        #expect(try contains("2001:db8:0:0:8000::/65", "2001:db8::ffff:0:0:1"))
        #expect(try !contains("2001:db8:0:0:8000::/65", "2001:db8::7fff:0:0:1"))
    }

    @Test func rejectsWhatIsNotARange() {
        for bad in ["", "/8", "10.0.0.0/", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/8/8", "::/129", "10.0.0.0/ 8",
                    "[::1]", "[::1]/128", "not an address", "10.0.0.0/x"] {
            #expect(IPAddressRange(bad) == nil, "\(bad)")
        }
        #expect(IPAddressRange("10.0.0.0/32") != nil)
        #expect(IPAddressRange("::/128") != nil)
    }

    @Test func rangesNestOrAreDisjoint() throws {
        let wide = try #require(IPAddressRange("10.0.0.0/8"))
        let narrow = try #require(IPAddressRange("10.1.0.0/16"))
        let other = try #require(IPAddressRange("192.168.0.0/16"))
        #expect(wide.contains(narrow))
        #expect(!narrow.contains(wide))
        #expect(wide.intersection(narrow) == narrow)
        #expect(narrow.intersection(wide) == narrow)
        #expect(wide.intersection(other) == nil)
        #expect(narrow.description == "10.1.0.0/16")
        #expect([wide, other].containsAddress(IPAddress("192.168.4.4")!))
        #expect(![narrow, other].containsAddress(IPAddress("10.2.0.1")!))
    }
}
