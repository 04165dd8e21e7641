import Essentials
import HTTPServer

/// Which header family a trusted proxy's word is taken from (`BLUELIBRARY_FORWARDED_HEADERS`).
/// Only one is ever read: a proxy sets (or clears) the family it knows and passes the other
/// through as the client sent it, so believing both would let a client pick its own address.
public enum ForwardedHeaderFamily: String, Sendable, Equatable, CaseIterable {
    /// `X-Forwarded-For`, `X-Forwarded-Proto`, `X-Forwarded-Host` (what nginx sets).
    case xForwarded = "x-forwarded"
    /// `Forwarded` (RFC 7239).
    case forwarded
}

/// Takes the client's address, scheme and host from the configured header family, but only
/// when the socket peer is a trusted proxy; from any other peer those headers are ignored,
/// since anyone can send them.
struct ForwardedHeadersMiddleware: HTTPMiddleware {
    let trustedProxies: [IPAddressRange]
    var family: ForwardedHeaderFamily = .xForwarded

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
        return try next.respond(to: request, context: context)
    }
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
