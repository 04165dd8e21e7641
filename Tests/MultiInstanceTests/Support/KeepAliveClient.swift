import Foundation
import HTTPTestSupport

/// One keep-alive HTTP/1.1 connection, as a load client holds it: requests go one after the
/// other on the same socket, and after a failure (or `Connection: close`) the next request
/// opens a new one. A request either returns a complete response or throws, within
/// `receiveTimeout` seconds of silence.
final class KeepAliveClient {
    let port: Int
    let receiveTimeout: Double
    private var connection: RawHTTPClient?

    init(port: Int, receiveTimeout: Double = 15) {
        self.port = port
        self.receiveTimeout = receiveTimeout
    }

    /// Sends `method path` (with `json` as an `application/json` body) and reads the answer.
    func request(_ method: String, _ path: String, json: String? = nil, headers: [String: String] = [:]) throws -> RawHTTPClient.Response {
        let client = try connection ?? RawHTTPClient(port: port, receiveTimeout: receiveTimeout)
        connection = nil
        let body = Array((json ?? "").utf8)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if json != nil { head += "Content-Type: application/json\r\n" }
        if json != nil || ["POST", "PUT", "PATCH"].contains(method) { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try client.send(Array(head.utf8) + body)
        let response = try client.readResponse(isHead: method == "HEAD")
        if !response.connectionTokens.contains("close") { connection = client }
        return response
    }

    /// The response's JSON object, or nil when the body is not one.
    static func object(_ response: RawHTTPClient.Response) -> [String: Any]? { try? response.json() }
}
