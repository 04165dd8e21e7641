import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// The in-process client answers as the real socket does, but for what only a connection adds:
/// on one started app, the same requests both ways give the same status, body and the headers
/// a route sets.
@Suite(.ownThreads) struct InProcessClientTests {
    @Test func theAnswersInProcessAreTheSocketsButForFraming() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let inProcess = Endpoint.inProcess(InProcessClient(app)), socket = Endpoint.port(app.port)
        let added = try inProcess.request(method: "POST", path: "/albums", headers: ["Content-Type": "application/json"],
                                          body: Array(#"{"title": "In Process", "artist": "Tester"}"#.utf8))
        let id = try added.json()["id"] as? String ?? "?"
        #expect(added.status == 201 && added.header("Location")?.hasSuffix("/albums/\(id)") == true, "\(added.text)")
        let requests: [(String, String, [String: String])] = [
            ("GET", "/albums?limit=3", [:]), ("GET", "/albums/at/0", [:]), ("GET", "/albums/at/99", [:]),
            ("GET", "/changes?since=0&limit=2", [:]), ("GET", "/changes?since=x", [:]), ("GET", "/libraries", [:]),
            ("GET", "/no/such/path", [:]), ("DELETE", "/healthz", [:]), ("HEAD", "/albums?limit=2", [:]),
            ("POST", "/albums", ["Content-Type": "application/json"]),
        ]
        for (method, path, headers) in requests {
            let body: [UInt8] = method == "POST" ? Array("{".utf8) : []
            let there = try socket.request(method: method, path: path, headers: headers, body: body)
            let here = try inProcess.request(method: method, path: path, headers: headers, body: body)
            #expect(here.status == there.status, "\(method) \(path): \(here.status) in process, \(there.status) over the socket")
            #expect(here.body == there.body, "\(method) \(path): \(here.text) / \(there.text)")
            for name in ["Content-Type", "ETag", "Cache-Control", "Allow", "Link"] {
                #expect(here.header(name) == there.header(name), "\(method) \(path): \(name)")
            }
            // The request id is each request's own; a connection adds the framing.
            #expect(here.header("X-Request-Id") != nil && here.header("Content-Length") == nil)
        }
    }
}
