import TestThreads
import Testing
@testable import HTTPServer

/// Response heads as bytes, without sockets.
@Suite(.ownThreads) struct ResponseHeadEncoderTests {
    let encoder = ResponseHeadEncoder(dateLine: Array("Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n".utf8))

    func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// What `write` puts through a ``HeadWriter`` into scratch space of `capacity` bytes.
    func written(capacity: Int, _ write: (inout HeadWriter) -> Void) -> [UInt8] {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { scratch in
            var writer = HeadWriter(scratch)
            write(&writer)
            return Array(scratch[0..<writer.count])
        }
    }

    @Test(arguments: [0, 7, 10, 99, 200, 1_000, 1_234_567_890, Int.max])
    func decimals(_ value: Int) {
        let bytes = written(capacity: 20) { $0.write(UInt8(ascii: "A")); $0.writeDecimal(value) }
        #expect(text(bytes) == "A\(value)")
    }

    @Test func fieldValuesLoseCRAndLF() {
        let bytes = written(capacity: 64) {
            $0.writeFieldValue("a\r\nInjected: yes")
            $0.writeFieldValue("|plain|")
            $0.writeFieldValue("é\n")
        }
        #expect(text(bytes) == "aInjected: yes|plain|é")
    }

    /// The scratch space is sized from the response before anything is written: long values,
    /// values full of CR/LF, a long reason, HTTP/1.0 and a stream (no Content-Length) all fit.
    @Test func theComputedBoundHoldsForAnyHead() {
        let long = String(repeating: "\r\nx", count: 5000)
        var response = HTTPResponse(status: HTTPStatus(code: 599), headers: ["Location": long, "X-Empty": ""])
        for index in 0..<50 { response.headers.add("X-\(index)", "\r") }
        for version in [HTTPVersion.http1_0, .http1_1] {
            for keepAlive in [true, false] {
                let head = encoder.encode(response, version: version, keepAlive: keepAlive, sendsBody: true)
                #expect(text(head.bytes).contains("Location: " + String(repeating: "x", count: 5000) + "\r\n"))
            }
        }
        let stream = HTTPResponse(body: .stream(HTTPStreamBody(endsOnShutdown: true) { $0.finish() }))
        #expect(text(encoder.encode(stream, version: .http1_0, keepAlive: true, sendsBody: true).bytes).hasSuffix("Connection: close\r\n\r\n"))
    }

    @Test func smallBodyFollowsTheHeadInOneBuffer() {
        let response = HTTPResponse(contentType: "application/json", bytes: Array("{}".utf8), headers: ["ETag": "\"x\""])
        let head = encoder.encode(response, version: .http1_1, keepAlive: true, sendsBody: true)
        #expect(head.bodyIncluded)
        #expect(text(head.bytes) == "HTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nETag: \"x\"\r\n"
            + "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
    }

    @Test func headRequestsAndLargeBodiesLeaveTheBodyOut() {
        let small = HTTPResponse(contentType: "text/plain", bytes: Array("hello".utf8))
        let head = encoder.encode(small, version: .http1_1, keepAlive: true, sendsBody: false)
        #expect(!head.bodyIncluded)
        #expect(text(head.bytes).hasSuffix("Content-Length: 5\r\n\r\n"))

        let large = HTTPResponse(contentType: "text/plain", bytes: [UInt8](repeating: 0x61, count: ResponseHeadEncoder.inlineBodyLimit + 1))
        let largeHead = encoder.encode(large, version: .http1_1, keepAlive: true, sendsBody: true)
        #expect(!largeHead.bodyIncluded)
        #expect(text(largeHead.bytes).hasSuffix("Content-Length: \(ResponseHeadEncoder.inlineBodyLimit + 1)\r\n\r\n"))
    }

    /// A HEAD whose GET body is not made states no length (RFC 9110 §8.6: none rather than a
    /// wrong one); the same body sent to a GET by mistake is an empty body, still framed.
    @Test func unknownLengthStatesNoLengthToAHead() {
        let response = HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: .unknownLength)
        let head = text(encoder.encode(response, version: .http1_1, keepAlive: true, sendsBody: false).bytes)
        #expect(head == "HTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Type: application/json\r\n\r\n")
        let get = text(encoder.encode(response, version: .http1_1, keepAlive: true, sendsBody: true).bytes)
        #expect(get.hasSuffix("Content-Length: 0\r\n\r\n"))
    }

    @Test func framingFieldsAreTheServers() {
        let response = HTTPResponse(
            status: .notModified,
            headers: ["ETag": "\"v1\"", "content-length": "99", "Connection": "upgrade", "Transfer-Encoding": "gzip", "date": "x"])
        let head = text(encoder.encode(response, version: .http1_1, keepAlive: false, sendsBody: false).bytes)
        #expect(head == "HTTP/1.1 304 Not Modified\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nETag: \"v1\"\r\nConnection: close\r\n\r\n")
    }

    @Test func http10KeepsAliveOnlyWhenAskedAndNeverWhileStreaming() {
        let empty = HTTPResponse(status: .noContent)
        #expect(text(encoder.encode(empty, version: .http1_0, keepAlive: true, sendsBody: false).bytes)
            == "HTTP/1.0 204 No Content\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nConnection: keep-alive\r\n\r\n")
        let stream = HTTPResponse(body: .stream(HTTPStreamBody { _ in }))
        #expect(text(encoder.encode(stream, version: .http1_0, keepAlive: true, sendsBody: true).bytes).hasSuffix(
            "\r\nConnection: close\r\n\r\n"))
        #expect(text(encoder.encode(stream, version: .http1_1, keepAlive: true, sendsBody: true).bytes).hasSuffix(
            "\r\nTransfer-Encoding: chunked\r\n\r\n"))
    }

    @Test func headerNamesCompareIgnoringASCIICaseOnly() {
        #expect("Content-Length".equalsIgnoringASCIICase("content-LENGTH"))
        #expect("".equalsIgnoringASCIICase(""))
        #expect(!"Host".equalsIgnoringASCIICase("Hosts"))
        #expect(!"[".equalsIgnoringASCIICase("{"))  // differ by 0x20 but are not letters
        #expect(!"@".equalsIgnoringASCIICase("`"))
        #expect(!"é".equalsIgnoringASCIICase("É"))  // ASCII only
        #expect("X-Request-Id-With-A-Long-Name-Beyond-Small-Strings".equalsIgnoringASCIICase(
            "x-request-id-with-a-long-name-beyond-small-strings"))
    }
}
