import Foundation
import TestThreads
import Testing
@testable import HTTPServer

/// File and stream bodies over real sockets.
@Suite(.ownThreads) struct ResponseBodyTests {
    static func makeFile(size: Int) throws -> (path: String, bytes: [UInt8]) {
        var bytes = [UInt8](repeating: 0, count: size)
        var state: UInt32 = 2_463_534_242
        for i in 0..<size {
            state ^= state << 13
            state ^= state >> 17
            state ^= state << 5
            bytes[i] = UInt8(truncatingIfNeeded: state)
        }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("HTTPServerTests-\(UUID().uuidString).bin").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return (path, bytes)
    }

    @Test func fileBodyIsServedWholeAndInPart() throws {
        let file = try Self.makeFile(size: 300 * 1024 + 123)
        defer { try? FileManager.default.removeItem(atPath: file.path) }
        let server = try TestServer { routes in
            routes.add(.get, "/file") { _, _ in
                HTTPResponse(
                    headers: ["Content-Type": "application/octet-stream"],
                    body: .file(HTTPFileBody(path: file.path, length: file.bytes.count)))
            }
            routes.add(.get, "/part") { _, _ in
                HTTPResponse(body: .file(HTTPFileBody(path: file.path, offset: 70_000, length: 5_000)))
            }
        }
        defer { server.stop() }
        // A small receive buffer and a late reader make the server's sendfile stop part-way.
        let client = try server.client(receiveBufferSize: 4096)

        try client.send("GET /file HTTP/1.1\r\nHost: test\r\n\r\n")
        Thread.sleep(forTimeInterval: 0.2)  // the late reader (a slow client), not a wait: passes either way
        let whole = try client.readResponse()
        #expect(whole.status == 200)
        #expect(whole.header("Content-Length") == String(file.bytes.count))
        #expect(whole.header("Content-Type") == "application/octet-stream")
        #expect(whole.body.count == file.bytes.count)
        #expect(firstDifference(whole.body, file.bytes) == nil, "the body is the file")

        // Same connection: the file ended exactly where Content-Length said.
        try client.send("GET /part HTTP/1.1\r\nHost: test\r\n\r\n")
        let part = try client.readResponse()
        #expect(part.header("Content-Length") == "5000")
        #expect(firstDifference(part.body, Array(file.bytes[70_000..<75_000])) == nil, "the body is the region")

        try client.send("HEAD /file HTTP/1.1\r\nHost: test\r\n\r\n")
        let head = try client.readResponse(isHead: true)
        #expect(head.header("Content-Length") == String(file.bytes.count))
        try client.send("GET /say?word=end HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(try client.readResponse().text == "end")
    }

    @Test func aFileGoneBeforeSendingGetsAnErrorAndTheConnectionLives() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("HTTPServerTests-gone-\(UUID().uuidString)").path
        let server = try TestServer { routes in
            routes.add(.get, "/gone") { _, _ in
                HTTPResponse(headers: ["ETag": "\"stale\""], body: .file(HTTPFileBody(path: path, length: 1_000)))
            }
        }
        defer { server.stop() }
        let client = try server.client()

        try client.send("GET /gone HTTP/1.1\r\nHost: test\r\n\r\n")
        let gone = try client.readResponse()
        #expect(gone.status == 503)
        #expect(gone.header("Retry-After") == "1")
        #expect(gone.header("Content-Type") == "application/problem+json")
        #expect(gone.header("ETag") == nil)  // nothing of the response that could not be sent
        #expect(gone.text.contains("went away"))

        // Not a truncated body followed by a close: the same connection goes on.
        try client.send("GET /say?word=still-here HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(try client.readResponse().text == "still-here")
    }

    @Test func streamBodyIsChunkedAndEndsWithTheLastChunk() throws {
        let writers = Handoff<HTTPStreamWriter>()
        let closed = Handoff<Bool>()
        let server = try TestServer { routes in
            routes.add(.get, "/events") { _, _ in
                HTTPResponse(
                    headers: ["Content-Type": "text/event-stream"],
                    body: .stream(HTTPStreamBody { writer in
                        writer.onClose { closed.put(true) }
                        writers.put(writer)
                    }))
            }
        }
        defer { server.stop() }
        let client = try server.client()

        try client.send("GET /events HTTP/1.1\r\nHost: test\r\n\r\n")
        let writer = try #require(writers.take())
        let producer = BackgroundThread {
            for i in 1...3 {
                writer.write(Array("event: tick\ndata: \(i)\n\n".utf8))
                Thread.sleep(forTimeInterval: 0.02)  // a slow producer: separate chunks
            }
            writer.finish()
        }
        let response = try client.readResponse()
        #expect(producer.join(seconds: 5))
        #expect(response.status == 200)
        #expect(response.header("Transfer-Encoding") == "chunked")
        #expect(response.header("Content-Length") == nil)
        #expect(response.header("Content-Type") == "text/event-stream")
        #expect(response.chunks?.map { String(decoding: $0, as: UTF8.self) } == [
            "event: tick\ndata: 1\n\n", "event: tick\ndata: 2\n\n", "event: tick\ndata: 3\n\n",
        ])
        #expect(closed.take() == true, "onClose runs when the stream finishes")
        #expect(writer.isClosed)
        #expect(writer.write([1, 2, 3]) == false, "writes after finish are refused")
        #expect(client.waitForClose(within: 3))
        #expect(client.buffer.isEmpty)
    }

    @Test func streamToHTTP10ClientIsCloseDelimited() throws {
        let server = try TestServer { routes in
            routes.add(.get, "/events") { _, _ in
                HTTPResponse(body: .stream(HTTPStreamBody { writer in
                    writer.write("one;".bytes)
                    writer.write("two".bytes)
                    writer.finish()
                }))
            }
        }
        defer { server.stop() }
        let client = try server.client()
        try client.send("GET /events HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.version == "HTTP/1.0")
        #expect(response.header("Transfer-Encoding") == nil)
        #expect(response.connectionTokens == ["close"])
        #expect(response.text == "one;two")
    }

    @Test func headOnStreamRouteSendsNoBody() throws {
        let started = Handoff<Bool>()
        let server = try TestServer { routes in
            routes.add(.get, "/events") { _, _ in
                HTTPResponse(body: .stream(HTTPStreamBody { writer in
                    started.put(true)
                    writer.finish()
                }))
            }
        }
        defer { server.stop() }
        let client = try server.client()
        try client.send("HEAD /events HTTP/1.1\r\nHost: test\r\n\r\n")
        let head = try client.readResponse(isHead: true)
        #expect(head.status == 200)
        try client.send("GET /say?word=next HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(try client.readResponse().text == "next")
        // A stream starts on the event loop as its response begins, before the connection goes
        // on to the next request: had it started for HEAD, it would have by now.
        #expect(started.take(seconds: 0) == nil, "the stream is not started for HEAD")
    }

    @Test func streamWriterSeesClientLeave() throws {
        let writers = Handoff<HTTPStreamWriter>()
        let closed = Handoff<Bool>()
        let server = try TestServer { routes in
            routes.add(.get, "/events") { _, _ in
                HTTPResponse(body: .stream(HTTPStreamBody { writer in
                    writer.onClose { closed.put(true) }
                    writers.put(writer)
                }))
            }
        }
        defer { server.stop() }
        do {
            let client = try server.client()
            try client.send("GET /events HTTP/1.1\r\nHost: test\r\n\r\n")
            _ = try #require(writers.take())
        }  // client closes here
        #expect(closed.take() == true, "the stream is closed when its client disconnects")
    }
}
