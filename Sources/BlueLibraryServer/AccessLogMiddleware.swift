import Essentials
import HTTPServer

/// One JSON line per request: method, path, status, bytes, duration, request id, client, and
/// the public id of the key sent (`key`, never a secret; absent without one).
/// It sits inside the request-id and forwarded-header middleware, so it logs what they decided.
struct AccessLogMiddleware: HTTPMiddleware {
    let logger: JSONLogger

    /// The server's own answers (401 before the body, 413, 408, ...) are logged too.
    var wrapsServerAnswers: Bool { true }

    func handle(_ request: HTTPRequest, context: RequestContext, next: any HTTPResponder) throws -> HTTPReply {
        switch try next.respond(to: request, context: context) {
        case let .response(response):
            log(response, request, context)
            return .response(response)
        case let .blocking(work):
            return .blocking { [self] in
                let response = try work()
                log(response, request, context)
                return response
            }
        }
    }

    private func log(_ response: HTTPResponse, _ request: HTTPRequest, _ context: RequestContext) {
        let elapsed = ContinuousClock.now - context.receivedAt
        let bytes: Int
        switch response.body {
        case .empty, .unknownLength, .stream: bytes = 0
        case let .bytes(b): bytes = b.count
        case let .file(f): bytes = f.length
        }
        var json = JSONWriter(capacity: 320)
        json.beginObject()
        json.key("time"); json.string(Timestamp.format(milliseconds: Timestamp.nowMilliseconds()))
        json.key("level"); json.string("info")
        json.key("message"); json.string("request")
        json.key("method"); json.string(request.method.rawValue)
        json.key("path"); json.string(String(request.path))
        json.key("status"); json.number(response.status.code)
        json.key("bytes"); json.number(bytes)
        json.key("durationMs"); json.number(Double(elapsed.nanoseconds / 1000) / 1000)
        json.key("requestId"); json.string(context.requestID)
        json.key("client"); json.string(context.clientAddress)
        if let key = AccessGuard.presentedKeyID(authorization: request.headers["Authorization"]) {
            json.key("key"); json.string(key)
        }
        json.endObject()
        json.newline()
        logger.write(json.bytes)
    }
}
