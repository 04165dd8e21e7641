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

    /// `<prefix>-<counter in hex>`, built in one allocation.
    func next() -> String {
        let n = counter.wrappingAdd(1, ordering: .relaxed).newValue
        let digits = max(1, (UInt64.bitWidth - n.leadingZeroBitCount + 3) / 4)
        let prefixBytes = prefix.utf8
        return String(unsafeUninitializedCapacity: prefixBytes.count + 1 + digits) { buffer in
            var i = 0
            for byte in prefixBytes {
                buffer[i] = byte
                i += 1
            }
            buffer[i] = UInt8(ascii: "-")
            for shift in stride(from: (digits - 1) * 4, through: 0, by: -4) {
                i += 1
                let nibble = UInt8(truncatingIfNeeded: n >> UInt64(shift)) & 0xF
                buffer[i] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
            }
            return i + 1
        }
    }
}
