import Foundation
import TestThreads
import Testing
@testable import HTTPServer

/// The head check: a request with a body can be answered from its head, before any body byte
/// is read and before `100 Continue`.
@Suite(.ownThreads) struct HeadCheckTests {
    static func makeServer() throws -> TestServer {
        try TestServer(headCheck: HeadCheck { request, _ in
            switch request.headers["X-Check"] {
            case "refuse": .refuse(HTTPResponse(status: .unauthorized, contentType: "text/plain", bytes: Array("no\n".utf8)))
            case "worker-refuse": .decideOnWorker { HTTPResponse(status: .unauthorized, contentType: "text/plain", bytes: Array("later no\n".utf8)) }
            case "worker-proceed": .decideOnWorker { nil }
            default: .proceed
            }
        })
    }

    @Test func refusedHeadsAreAnsweredWithoutContinueAndClosed() throws {
        let server = try Self.makeServer()
        defer { server.stop() }
        for check in ["refuse", "worker-refuse"] {
            let client = try server.client()
            try client.send("POST /echo HTTP/1.1\r\nHost: test\r\nX-Check: \(check)\r\nContent-Length: 500\r\nExpect: 100-continue\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 401, "\(check)")
            #expect(response.connectionTokens.contains("close"))
            #expect(client.waitForClose(within: 3))
        }
    }

    @Test func acceptedHeadsGetContinueAndTheirBodyRead() throws {
        let server = try Self.makeServer()
        defer { server.stop() }
        for check in ["none", "worker-proceed"] {
            let client = try server.client()
            try client.send("POST /echo HTTP/1.1\r\nHost: test\r\nX-Check: \(check)\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
            #expect(try client.readResponse().status == 100, "\(check)")
            try client.send("hello")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.text == "hello")
        }
    }
}
