import Essentials
@testable import Covers
import Library
import TestThreads
import Testing

@Suite(.ownThreads) struct ImageSignatureTests {
    @Test func recognisesTheFourFormats() {
        #expect(ImageSignature.sniff(Fixtures.png) == .png)
        #expect(ImageSignature.sniff(Fixtures.jpeg) == .jpeg)
        #expect(ImageSignature.sniff(Array("GIF89a....".utf8)) == .gif)
        #expect(ImageSignature.sniff(Array("GIF87a....".utf8)) == .gif)
        #expect(ImageSignature.sniff(Array("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8 ".utf8)) == .webp)
        #expect(ImageSignature.webp.mediaType == "image/webp")
    }

    @Test func refusesEverythingElse() {
        #expect(ImageSignature.sniff(Fixtures.html) == nil)
        #expect(ImageSignature.sniff([]) == nil)
        #expect(ImageSignature.sniff([0x89, 0x50, 0x4E]) == nil)
        #expect(ImageSignature.sniff(Array("RIFF\u{0}\u{0}\u{0}\u{0}WAVEfmt ".utf8)) == nil)
        #expect(ImageSignature.sniff(Array("%PDF-1.7".utf8)) == nil)
    }
}

@Suite(.ownThreads) struct CoverURLTests {
    @Test func normalisesSchemeHostPortAndFragment() throws {
        #expect(try CoverURL("HTTP://Example.COM:80/a/B.png#x").description == "http://example.com/a/B.png")
        #expect(try CoverURL("https://example.com:443").description == "https://example.com/")
        #expect(try CoverURL("https://example.com:8443?q=1").description == "https://example.com:8443/?q=1")
        #expect(try CoverURL("http://[::1]:8080/c.png").description == "http://[::1]:8080/c.png")
        #expect(try CoverURL("http://[::1]:8080/c.png").host == "::1")
    }

    @Test func refusesWhatIsNotAPlainHTTPURL() {
        for text in [
            "ftp://example.com/a.png", "file:///etc/passwd", "gopher://x/", "example.com/a.png", "http:///a.png",
            "http://user:pw@example.com/a.png", "http://exa mple.com/", "http://example.com:0/", "http://example.com:99999/",
            "http://exa\\mple.com/", "http://[::1/", "http://ex%41mple.com/", "http://é.com/", "",
        ] {
            #expect(throws: CoverError.self, "\(text)") { try CoverURL(text) }
        }
        #expect((try? CoverURL("ftp://x/")) == nil)
    }

    /// The fast paths' memo of keys gives what the parser gives, refuses what it refuses, and
    /// stays bounded.
    @Test func keysAreTheNormalFormRemembered() throws {
        let keys = CoverKeys()
        for _ in 0..<2 {
            #expect(try keys.key("HTTP://Example.COM:80/a/B.png#x") == "http://example.com/a/B.png")
            #expect(throws: CoverError.self) { try keys.key("ftp://example.com/a.png") }
        }
        for index in 0..<(CoverKeys.capacity + 10) {
            #expect(try keys.key("http://example.com/\(index).png") == "http://example.com/\(index).png")
        }
        #expect(keys.count <= CoverKeys.capacity)
    }
}

@Suite(.ownThreads) struct CoverAddressPolicyTests {
    private func blocked(_ text: String, policy: CoverAddressPolicy = CoverAddressPolicy(), host: String = "h") -> Bool {
        !policy.permits(IPAddress(text)!, host: host)
    }

    @Test func refusesInternalRangesByDefault() {
        for address in [
            "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
            "0.0.0.0", "100.64.0.1", "224.0.0.1", "255.255.255.255", "::", "::1", "fc00::1", "fd12:3456::1",
            "fe80::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe", "2002:7f00:1::1", "::127.0.0.1",
            // Local-use NAT64 (RFC 8215) and IPv4-translated (SIIT) forms reach internal IPv4 too.
            "64:ff9b:1::7f00:1", "64:ff9b:1:ffff::a9fe:a9fe", "64:ff9b:1::808:808", "::ffff:0:7f00:1", "::ffff:0:a9fe:a9fe",
            "::ffff:0:808:808",
        ] {
            #expect(blocked(address), "\(address) must be refused")
        }
    }

    @Test func permitsPublicAddresses() {
        for address in ["93.184.216.34", "8.8.8.8", "172.32.0.1", "192.169.0.1", "2606:4700::1111", "::ffff:8.8.8.8"] {
            #expect(!blocked(address), "\(address) must be allowed")
        }
    }

    @Test func allowListOpensRangesAndHosts() throws {
        let policy = try CoverAddressPolicy(allowList: " 127.0.0.1/32, covers.internal ,fd00::/8")
        #expect(!blocked("127.0.0.1", policy: policy))
        #expect(!blocked("::ffff:127.0.0.1", policy: policy))
        #expect(blocked("127.0.0.2", policy: policy))
        #expect(!blocked("fd00::5", policy: policy))
        #expect(!blocked("10.0.0.9", policy: policy, host: "covers.internal"))
        #expect(blocked("10.0.0.9", policy: policy, host: "other.internal"))
        #expect(policy.allowedHosts == ["covers.internal"])
    }

    @Test func settingsOnlyNarrowWhatTheEnvironmentOpened() throws {
        let environment = try CoverAddressPolicy(allowList: "127.0.0.0/8,covers.internal,10.1.0.0/16")
        // What the environment did not open stays shut, however wide the setting.
        let widened = environment.narrowed(to: try CoverAddressPolicy(allowList: "0.0.0.0/0,::/0,169.254.169.254,other.internal"))
        #expect(!blocked("127.0.0.1", policy: widened))
        #expect(!blocked("10.1.2.3", policy: widened))
        #expect(blocked("169.254.169.254", policy: widened))
        #expect(blocked("10.2.0.1", policy: widened))
        #expect(blocked("192.168.1.1", policy: widened, host: "other.internal"))
        #expect(blocked("10.9.0.1", policy: widened, host: "covers.internal"), "a host the setting does not name is closed")
        // A narrower setting closes the rest.
        let narrowed = environment.narrowed(to: try CoverAddressPolicy(allowList: "127.0.0.2,covers.internal"))
        #expect(!blocked("127.0.0.2", policy: narrowed))
        #expect(blocked("127.0.0.1", policy: narrowed))
        #expect(blocked("10.1.2.3", policy: narrowed))
        #expect(!blocked("10.9.0.1", policy: narrowed, host: "covers.internal"))
        #expect(try environment.opens(entry: "127.0.0.2") && environment.opens(entry: "127.1.0.0/16") && environment.opens(entry: "Covers.Internal"))
        #expect(try !environment.opens(entry: "0.0.0.0/0") && !environment.opens(entry: "127.0.0.0/7") && !environment.opens(entry: "other.internal"))
    }

    @Test func badAllowListEntriesAreReported() {
        #expect(throws: CoverAddressPolicy.InvalidEntry(entry: "10.0.0.0/33")) {
            try CoverAddressPolicy(allowList: "10.0.0.0/33")
        }
        #expect(throws: CoverAddressPolicy.InvalidEntry(entry: "http://x/")) {
            try CoverAddressPolicy(allowList: "ok.example,http://x/")
        }
        for bad in ["[::1/8]", "[::1]x", "[::1", "[[::1]]"] {
            #expect(throws: CoverAddressPolicy.InvalidEntry(entry: bad)) { try CoverAddressPolicy(allowing: [bad]) }
        }
    }

    @Test func allowListAddressesMayBeBracketedAsInURLs() throws {
        let policy = try CoverAddressPolicy(allowList: "[fd00::1],[fe80::]/10,[10.0.0.1]")
        #expect(!blocked("fd00::1", policy: policy))
        #expect(blocked("fd00::2", policy: policy))
        #expect(!blocked("fe80::9", policy: policy))
        #expect(!blocked("10.0.0.1", policy: policy))
    }
}
