import Essentials
import HTTPServer

/// With read replicas: where each request stands in the database's history (``ReadPosition``).
///
/// The client's position is the newer of the `BlueLibrary-Position` request header (what an
/// earlier response handed out) and the `bl_position` cookie (browsers); reads of a GET or HEAD
/// may then come from a replica that has replayed it. Every response whose work read or wrote
/// carries the newest position in the same header, and sets the cookie when that is newer
/// than the cookie: a client that sends it back never reads older than what it wrote or saw.
/// (An answer the work threw, an error, carries none: the client keeps the one it had.)
///
/// Installed only when replicas are configured: without them there is nothing to say.
struct ReadPositionMiddleware: HTTPMiddleware {
    static let header = "BlueLibrary-Position"
    static let cookie = "bl_position"

    func handle(_ request: HTTPRequest, context: RequestContext, next: any HTTPResponder) throws -> HTTPReply {
        let fromHeader = try Self.headerPosition(request) ?? 0
        let fromCookie = Self.cookiePosition(request) ?? 0
        let reply = try next.respond(to: request, context: context)
        guard case let .blocking(work) = reply else { return reply }
        let position = ReadPosition(required: max(fromHeader, fromCookie), mayUseReplica: request.method == .get || request.method == .head)
        return .blocking {
            var response = try ReadPosition.$current.withValue(position) { try work() }
            guard let reached = position.handedBack, reached > 0 else { return response }
            let text = ReadPosition.text(reached)
            response.headers.set(Self.header, text)
            if reached > fromCookie {
                response.headers.add("Set-Cookie", "\(Self.cookie)=\(text); Path=/; Max-Age=3600; SameSite=Lax; HttpOnly")
            }
            return response
        }
    }

    /// The header's position; nil without one. A value that is not one is the client's mistake.
    static func headerPosition(_ request: HTTPRequest) throws -> UInt64? {
        guard let text = request.headers[header] else { return nil }
        guard let position = ReadPosition.parse(text.trimmingASCIIWhitespace()) else {
            throw HTTPError(.badRequest,
                            detail: "\(header) must be a position an earlier response of this server handed out in its \(header) header, "
                                + "such as 0/16B3748; leave the header out when you have none.")
        }
        return position
    }

    /// The cookie's position; nil without one (a cookie that is not one is ignored: the
    /// browser keeps what it was given, and nobody types it).
    static func cookiePosition(_ request: HTTPRequest) -> UInt64? {
        guard let cookies = request.headers["Cookie"] else { return nil }
        for pair in cookies.split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingASCIIWhitespace() == cookie else { continue }
            return ReadPosition.parse(parts[1].trimmingASCIIWhitespace())
        }
        return nil
    }
}
