import HTTPServer

/// Takes the client's address, scheme and host from `Forwarded` (RFC 7239) or
/// `X-Forwarded-For/-Proto/-Host`, but only when the socket peer is a trusted proxy; from any
/// other peer those headers are ignored, since anyone can send them.
struct ForwardedHeadersMiddleware: HTTPMiddleware {
    let trustedProxies: [CIDR]

    func handle(_ request: HTTPRequest, context: RequestContext, next: any HTTPResponder) throws -> HTTPResponse {
        guard !trustedProxies.isEmpty, trustedProxies.containsAddress(context.peerAddress) else {
            return try next.respond(to: request, context: context)
        }
        var context = context
        let forwarded = ForwardedHeaders(request.headers)
        // Walk the chain right to left: the first hop that is not a trusted proxy is the client.
        if let client = forwarded.chain.reversed().first(where: { !trustedProxies.containsAddress($0) }) ?? forwarded.chain.first {
            context.clientAddress = client
        }
        if let proto = forwarded.proto?.lowercased(), proto == "http" || proto == "https" {
            context.scheme = proto
        }
        if let host = forwarded.host, !host.isEmpty {
            context.host = host
        }
        return try next.respond(to: request, context: context)
    }
}

/// What a proxy says about the original request.
struct ForwardedHeaders: Equatable {
    /// Client addresses, first (original client) to last (nearest proxy).
    var chain: [String] = []
    var proto: String?
    var host: String?

    init(_ headers: HTTPHeaders) {
        let forwarded = headers.values(for: "Forwarded")
        if !forwarded.isEmpty {
            for element in forwarded.flatMap({ $0.split(separator: ",") }) {
                for pair in element.split(separator: ";") {
                    guard let eq = pair.firstIndex(of: "=") else { continue }
                    let key = pair[..<eq].trimmingASCIIWhitespace().lowercased()
                    var value = pair[pair.index(after: eq)...].trimmingASCIIWhitespace()
                    if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                        value = String(value.dropFirst().dropLast())
                    }
                    switch key {
                    case "for": chain.append(Self.stripPort(value))
                    case "proto": proto = value
                    case "host": host = value
                    default: break
                    }
                }
            }
            return
        }
        chain = headers.values(for: "X-Forwarded-For").flatMap { $0.split(separator: ",") }.map {
            Self.stripPort($0.trimmingASCIIWhitespace())
        }.filter { !$0.isEmpty }
        proto = headers.values(for: "X-Forwarded-Proto").last?.split(separator: ",").last?.trimmingASCIIWhitespace()
        host = headers.values(for: "X-Forwarded-Host").last?.split(separator: ",").last?.trimmingASCIIWhitespace()
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
