/// A response: status, headers and a body. The server adds `Date`, `Content-Length` (or
/// chunked framing) and `Connection` itself; handlers set everything else.
public struct HTTPResponse: Sendable {
    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var body: HTTPBody

    public init(status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders(), body: HTTPBody = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response with bytes and a content type.
    public init(status: HTTPStatus = .ok, contentType: String, bytes: [UInt8], headers: HTTPHeaders = HTTPHeaders()) {
        self.status = status
        self.headers = headers
        self.headers.set("Content-Type", contentType)
        self.body = .bytes(bytes)
    }
}

/// What follows the head of a response.
public enum HTTPBody: Sendable {
    /// No body (`Content-Length: 0`, or none for 1xx/204/304).
    case empty
    /// Bytes held in memory.
    case bytes([UInt8])
    /// A region of a file, streamed from disk with `sendfile(2)` (covers use it).
    case file(HTTPFileBody)
    /// A body produced over time (Server-Sent Events use it); sent chunked to HTTP/1.1 clients.
    case stream(HTTPStreamBody)
}

/// A file on disk served as a body. The file is opened when the response is written; if it
/// has gone by then the connection is closed (the head may already be out).
public struct HTTPFileBody: Sendable {
    public var path: String
    public var offset: Int
    public var length: Int

    public init(path: String, offset: Int = 0, length: Int) {
        self.path = path
        self.offset = offset
        self.length = length
    }
}

/// A body that stays open. `start` runs on the connection's event loop once the head is
/// written, with a writer that any thread may use.
public struct HTTPStreamBody: Sendable {
    public var start: @Sendable (HTTPStreamWriter) -> Void
    /// Whether a graceful shutdown ends the stream at once (event feeds: yes), or lets it run
    /// to its end within the grace period (a download such as an export: cutting it short
    /// with a clean last chunk would pass a truncated body off as complete).
    public var endsOnShutdown: Bool
    /// A long-lived stream of small messages that a client may stop reading (event feeds):
    /// its socket's send buffer is capped (`HTTPServerLimits.streamSendBufferBytes`) and it is
    /// dropped once its unsent bytes, the kernel's included, pass
    /// `HTTPServerLimits.maxUnsentStreamBytes`. Off for downloads, which want throughput.
    public var boundsUnsentBytes: Bool

    public init(endsOnShutdown: Bool = true, boundsUnsentBytes: Bool = false, start: @escaping @Sendable (HTTPStreamWriter) -> Void) {
        self.start = start
        self.endsOnShutdown = endsOnShutdown
        self.boundsUnsentBytes = boundsUnsentBytes
    }
}
