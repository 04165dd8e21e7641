import HTTPServer
import Synchronization

/// Gives every request an id: the proxy's `X-Request-Id` when it is sane, else a new one, and
/// echoes it on the response so a client can quote it when reporting a problem.
struct RequestIDMiddleware: HTTPMiddleware {
    let generator = RequestIDGenerator()

    func handle(_ request: HTTPRequest, context: RequestContext, next: any HTTPResponder) throws -> HTTPResponse {
        var context = context
        if let incoming = request.headers["X-Request-Id"], Self.isAcceptable(incoming) {
            context.requestID = incoming
        } else {
            context.requestID = generator.next()
        }
        var response = try next.respond(to: request, context: context)
        response.headers.add("X-Request-Id", context.requestID)  // handlers never set it
        return response
    }

    /// 1 to 128 visible ASCII characters: anything else could poison logs.
    static func isAcceptable(_ id: String) -> Bool {
        let bytes = id.utf8
        return !bytes.isEmpty && bytes.count <= 128 && bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
    }
}

/// Ids unique within and across processes: a random 64-bit prefix per process and a counter.
final class RequestIDGenerator: Sendable {
    private let prefix: String
    private let counter = Atomic<UInt64>(0)

    init() {
        let random = UInt64.random(in: .min ... .max)
        let hex = String(random, radix: 16)
        prefix = String(repeating: "0", count: 16 - hex.count) + hex
    }

    func next() -> String {
        let n = counter.wrappingAdd(1, ordering: .relaxed).newValue
        return prefix + "-" + String(n, radix: 16)
    }
}
