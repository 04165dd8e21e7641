import Essentials
import HTTPServer
import Synchronization

/// Which header family a trusted proxy's word is taken from (`BLUELIBRARY_FORWARDED_HEADERS`).
/// Only one is ever read: a proxy sets (or clears) the family it knows and passes the other
/// through as the client sent it, so believing both would let a client pick its own address.
public enum ForwardedHeaderFamily: String, Sendable, Equatable, CaseIterable {
    /// `X-Forwarded-For`, `X-Forwarded-Proto`, `X-Forwarded-Host` (what nginx sets).
    case xForwarded = "x-forwarded"
    /// `Forwarded` (RFC 7239).
    case forwarded
}

/// Takes the client's address, scheme and host from the configured header family, and (with
/// `x-forwarded`) the path prefix from `X-Forwarded-Prefix`, but only when the socket peer is a
/// trusted proxy; from any other peer those headers are ignored, since anyone can send them.
struct ForwardedHeadersMiddleware: HTTPMiddleware {
    let trustedProxies: [IPAddressRange]
    var family: ForwardedHeaderFamily = .xForwarded
    /// Where a refused `X-Forwarded-Prefix` is reported (nil: nowhere).
    var logger: JSONLogger?
    /// The first refused prefix is a warning, later ones debug lines (a proxy that passes a
    /// client's header through must not let that client fill the log).
    let refusedPrefixes = RefusedPrefixCount()

    /// The access log of the server's own answers names the client a trusted proxy forwarded.
    var wrapsServerAnswers: Bool { true }

    func handle(_ request: HTTPRequest, context: RequestContext, next: any HTTPResponder) throws -> HTTPReply {
        guard trusts(context.peerAddress) else {
            return try next.respond(to: request, context: context)
        }
        var context = context
        let forwarded = ForwardedHeaders(request.headers, family: family)
        if let client = forwarded.client(trusting: trustedProxies) { context.forwardedClientAddress = client }
        if let proto = forwarded.proto?.lowercased(), proto == "http" || proto == "https" {
            context.scheme = proto
        }
        if let host = forwarded.host, !host.isEmpty {
            context.host = host
        }
        if family == .xForwarded, let prefix = request.headers.values(for: "X-Forwarded-Prefix").last {
            if let valid = Self.pathPrefix(prefix) {
                context.pathPrefix = valid
            } else {
                refused(prefix)
            }
        }
        return try next.respond(to: request, context: context)
    }

    /// A trusted proxy sent a prefix that is no plain path: it is ignored (URLs are written
    /// without a prefix, as before), and the log says so. Not a 400: the header may be a
    /// client's, passed through by a proxy that does not set it, and that client must not be
    /// able to break its requests or anyone else's; the operator reads the log.
    private func refused(_ prefix: String) {
        guard let logger else { return }
        let first = refusedPrefixes.count.wrappingAdd(1, ordering: .relaxed).oldValue == 0
        logger.log(first ? .warning : .debug,
                   "X-Forwarded-Prefix from a trusted proxy ignored: it must be a path like /music (at most "
                   + "\(Self.maxPrefixBytes) bytes of letters, digits, -._~ and %XX, no empty, . or .. segment)",
                   [("value", .string(String(prefix.prefix(300))))])
    }

    static let maxPrefixBytes = 256

    /// `X-Forwarded-Prefix` as the prefix to write (`/music/` → `/music`, `/` → empty), or nil
    /// when it is not a plain absolute path: it must start with `/`, be at most
    /// ``maxPrefixBytes`` bytes of unreserved characters (`A-Z a-z 0-9 - . _ ~`), `/` and `%XX`
    /// escapes (none of them a dot, slash or backslash), with no empty, `.` or `..` segment.
    /// That excludes CR/LF, quotes, `<>`, `,` and `;` (which would break out of a `Link`
    /// header), `?` and `#`, and `//` (a URL starting with it names another host).
    static func pathPrefix(_ value: String) -> String? {
        let bytes = Array(value.utf8)
        guard bytes.first == UInt8(ascii: "/"), bytes.count <= maxPrefixBytes else { return nil }
        var trimmed = bytes[...]
        if trimmed.last == UInt8(ascii: "/") { trimmed = trimmed.dropLast() }
        if trimmed.isEmpty { return "" }
        var index = trimmed.startIndex
        while index < trimmed.endIndex {
            let byte = trimmed[index]
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                index += 1
            case UInt8(ascii: "%"):
                guard index + 2 < trimmed.endIndex, let high = hexValue(trimmed[index + 1]), let low = hexValue(trimmed[index + 2]),
                    ![0x2E, 0x2F, 0x5C].contains(high << 4 | low)
                else { return nil }
                index += 3
            default:
                return nil
            }
        }
        for segment in trimmed.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            if segment.isEmpty || segment.elementsEqual(".".utf8) || segment.elementsEqual("..".utf8) { return nil }
        }
        return String(decoding: trimmed, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// How many `X-Forwarded-Prefix` values were refused (shared by copies of the middleware).
final class RefusedPrefixCount: Sendable {
    let count = Atomic<Int>(0)
}

extension ForwardedHeadersMiddleware {
    /// The client's address: the peer, or, from a trusted proxy, what its headers say.
    func clientAddress(_ request: HTTPRequest, _ context: RequestContext) -> String {
        guard trusts(context.peerAddress) else { return context.clientAddress }
        return ForwardedHeaders(request.headers, family: family).client(trusting: trustedProxies) ?? context.clientAddress
    }

    /// Whether the socket peer is a trusted proxy (its address was read once, at accept).
    func trusts(_ peer: IPAddress) -> Bool {
        !trustedProxies.isEmpty && trustedProxies.containsAddress(peer)
    }
}

/// What a proxy says about the original request.
struct ForwardedHeaders: Equatable {
    /// Client addresses, first (original client) to last (nearest proxy).
    var chain: [String] = []
    var proto: String?
    var host: String?

    /// Reads `family` only; the other family is ignored whatever it says.
    init(_ headers: HTTPHeaders, family: ForwardedHeaderFamily) {
        switch family {
        case .forwarded:
            // proto and host come from the last element only (the one the nearest proxy wrote).
            let forwarded = headers.values(for: "Forwarded")
            for element in forwarded.flatMap({ $0.split(separator: ",") }) {
                proto = nil
                host = nil
                for pair in element.split(separator: ";") {
                    guard let eq = pair.firstIndex(of: "=") else { continue }
                    let key = pair[..<eq].trimmingASCIIWhitespace().lowercased()
                    var value = pair[pair.index(after: eq)...].trimmingASCIIWhitespace()
                    if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                        value = String(value.dropFirst().dropLast())
                    }
                    switch key {
                    case "for":
                        // As for X-Forwarded-For, an empty entry is no hop (it must never be the client).
                        let address = Self.stripPort(value)
                        if !address.isEmpty { chain.append(address) }
                    case "proto": proto = value
                    case "host": host = value
                    default: break
                    }
                }
            }
        case .xForwarded:
            chain = headers.values(for: "X-Forwarded-For").flatMap { $0.split(separator: ",") }.map {
                Self.stripPort($0.trimmingASCIIWhitespace())
            }.filter { !$0.isEmpty }
            proto = headers.values(for: "X-Forwarded-Proto").last?.split(separator: ",").last?.trimmingASCIIWhitespace()
            host = headers.values(for: "X-Forwarded-Host").last?.split(separator: ",").last?.trimmingASCIIWhitespace()
        }
    }

    /// The client: the chain is read from the right (the nearest proxy's entry first), trusted
    /// proxies are skipped, and the first hop that is not one is the client. Entries left of it
    /// were written by the client itself and are never believed. A chain of trusted proxies
    /// only gives its leftmost entry; an empty chain gives nil (the peer stays the client).
    func client(trusting trusted: [IPAddressRange]) -> String? {
        // Each hop is parsed once, then matched against every range; text that is no
        // address is never a trusted proxy.
        for hop in chain.reversed() where !(IPAddress(hop).map(trusted.containsAddress) ?? false) {
            return hop
        }
        return chain.first
    }

    /// `[2001:db8::1]:4711` → `2001:db8::1`, `192.0.2.1:80` → `192.0.2.1`.
    static func stripPort(_ value: String) -> String {
        if value.hasPrefix("["), let close = value.firstIndex(of: "]") {
            return String(value[value.index(after: value.startIndex)..<close])
        }
        if value.filter({ $0 == ":" }).count == 1, let colon = value.firstIndex(of: ":") {
            return String(value[..<colon])
        }
        return value
    }
}
