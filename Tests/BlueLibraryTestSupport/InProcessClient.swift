import BlueLibraryServer
import Foundation
import HTTPServer
import HTTPTestSupport

/// Requests to an app answered by its routes in this process (``BlueLibraryApp/answerInProcess(_:)``):
/// no socket, no event loop, no child process, and the app need not be started. For route
/// suites whose subject is what a route answers; what only a connection shows (framing,
/// timeouts, a streamed body, head checks, a killed process) stays with the real-socket suites.
/// The answer has the shape of a socket's (`RawHTTPClient.Response`), so a suite can take either.
public struct InProcessClient: Sendable {
    public let app: BlueLibraryApp

    public init(_ app: BlueLibraryApp) { self.app = app }

    /// `method path` with `headers` (`Host` the app's address unless given) and `body`, answered
    /// now. A file body is read from disk; a
    /// HEAD's body is dropped (as a connection does); a streamed body (an event stream, an
    /// export) comes back empty.
    public func request(method: String = "GET", path: String, headers: [String: String] = [:], body: [UInt8] = []) -> RawHTTPClient.Response {
        var fields = HTTPHeaders(headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        // As a client of the app's own address would send them (absolute URLs are made from Host).
        if !fields.contains("Host") { fields.set("Host", "127.0.0.1:\(app.port)") }
        if !body.isEmpty && !fields.contains("Content-Length") { fields.set("Content-Length", String(body.count)) }
        let request = HTTPRequest(method: HTTPMethod(rawValue: method), target: path, headers: fields, body: body)
        let response = app.answerInProcess(request)
        var bytes: [UInt8] = []
        switch response.body {
        case let .bytes(content): bytes = content
        case let .file(file):
            if let handle = FileHandle(forReadingAtPath: file.path) {
                defer { try? handle.close() }
                try? handle.seek(toOffset: UInt64(file.offset))
                bytes = Array((try? handle.read(upToCount: file.length)) ?? Data())
            }
        case .empty, .unknownLength, .stream: break
        }
        if method == "HEAD" { bytes = [] }
        return RawHTTPClient.Response(status: response.status.code, reason: response.status.reasonPhrase,
                                      headers: response.headers.map { (name: $0.name, value: $0.value) }, body: bytes)
    }
}

/// Where a route suite sends its requests: over a real socket to a port, or to an app in
/// process. The same helpers serve both, so a suite keeps one real-process test (a kill and a
/// restart) beside the in-process ones.
public enum Endpoint: Sendable {
    case port(Int)
    case inProcess(InProcessClient)

    public func request(method: String = "GET", path: String, headers: [String: String] = [:], body: [UInt8] = []) throws
        -> RawHTTPClient.Response
    {
        switch self {
        case let .port(port): try RawHTTPClient.request(port: port, method: method, path: path, headers: headers, body: body)
        case let .inProcess(client): client.request(method: method, path: path, headers: headers, body: body)
        }
    }
}
