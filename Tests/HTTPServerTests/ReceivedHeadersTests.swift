import Testing
import TestThreads
@testable import HTTPServer

/// A request's headers as the parser leaves them: byte ranges into one copy of the head
/// (``RequestHeadFields``), read through the same ``HTTPHeaders`` API as built headers.
@Suite(.ownThreads) struct ReceivedHeadersTests {
    let parser = HTTPHeadParser(limits: HTTPServerLimits())

    func headers(_ fields: String) throws -> HTTPHeaders {
        let text = "GET /x HTTP/1.1\r\nHost: example.org:8080\r\n\(fields)\r\n"
        guard case let .head(head, _) = try parser.parse(Array(text.utf8), from: 0) else {
            Issue.record("incomplete head")
            return HTTPHeaders()
        }
        return head.headers
    }

    @Test func lookupsCompareNamesIgnoringCaseAndKeepOrder() throws {
        let headers = try headers("If-None-Match: \"v12-0123456789abcdef\"\r\nX-A: 1\r\nx-a:  2 \t\r\nAccept:\r\n")
        #expect(headers.count == 5)
        #expect(headers["host"] == "example.org:8080")
        #expect(headers["IF-NONE-MATCH"] == "\"v12-0123456789abcdef\"")
        #expect(headers["X-A"] == "1")
        #expect(headers.values(for: "x-A") == ["1", "2"])
        #expect(headers["Accept"] == "")
        #expect(headers.contains("accept"))
        #expect(!headers.contains("Accept-Encoding"))
        #expect(headers["Missing"] == nil)
        #expect(headers.fields.map(\.name) == ["Host", "If-None-Match", "X-A", "x-a", "Accept"])
        #expect(headers.map(\.value) == ["example.org:8080", "\"v12-0123456789abcdef\"", "1", "2", ""])
    }

    @Test func withFirstValueHandsOverTheReceivedBytes() throws {
        let headers = try headers("If-None-Match: W/\"a\", \"b\"\r\nif-none-match: \"c\"\r\n")
        let first = headers.withFirstValue("If-None-Match") { Array($0) }
        #expect(first == Array("W/\"a\", \"b\"".utf8))
        #expect(headers.withFirstValue("If-Match") { _ in true } == nil)
        // Built headers answer the same way.
        let built: HTTPHeaders = ["ETag": "\"x\""]
        #expect(built.withFirstValue("etag") { String(decoding: $0, as: UTF8.self) } == "\"x\"")
    }

    @Test func editingReceivedHeadersKeepsTheOthersInOrder() throws {
        var headers = try headers("A: 1\r\nB: 2\r\nA: 3\r\n")
        headers.add("C", "4")
        #expect(headers.fields.map(\.name) == ["Host", "A", "B", "A", "C"])
        headers.set("a", "5")
        #expect(headers.fields.map { "\($0.name)=\($0.value)" } == ["Host=example.org:8080", "B=2", "C=4", "a=5"])
        headers.remove("HOST")
        #expect(headers["Host"] == nil)
        #expect(headers.count == 3)
        // A copy taken before the edit still sees the received fields.
        let original = try self.headers("A: 1\r\n")
        var edited = original
        edited.remove("A")
        #expect(original["A"] == "1")
        #expect(edited["A"] == nil)
    }

    @Test func manyFieldsUpToTheLimitAreAllKept() throws {
        var limits = HTTPServerLimits()
        limits.maxHeaderCount = 60
        let parser = HTTPHeadParser(limits: limits)
        let fields = (0..<59).map { "N\($0): \(String(repeating: "v", count: $0))\r\n" }.joined()
        let text = "GET / HTTP/1.1\r\nHost: h\r\n\(fields)\r\n"
        guard case let .head(head, _) = try parser.parse(Array(text.utf8), from: 0) else {
            Issue.record("incomplete head")
            return
        }
        #expect(head.headers.count == 60)
        for n in [0, 1, 30, 58] { #expect(head.headers["n\(n)"] == String(repeating: "v", count: n)) }
        #expect(throws: HTTPParseError.tooManyHeaders) {
            _ = try parser.parse(Array("GET / HTTP/1.1\r\nHost: h\r\n\(fields)X: y\r\n\r\n".utf8), from: 0)
        }
    }

    @Test func theShortestFieldLinesFitTheTable() throws {
        // "a:" lines with bare LF: the densest head the field table has to hold.
        let fields = String(repeating: "a:\n", count: 90)
        let text = "GET / HTTP/1.1\nHost:h\n\(fields)\n"
        guard case let .head(head, _) = try parser.parse(Array(text.utf8), from: 0) else {
            Issue.record("incomplete head")
            return
        }
        #expect(head.headers.count == 91)
        #expect(head.headers.values(for: "A").count == 90)
        #expect(head.headers["host"] == "h")
    }

    @Test func framingFieldsAreStillFoundInReceivedHeaders() throws {
        let head = "POST / HTTP/1.1\r\nHost: a\r\nX-Long-Name-Header: \(String(repeating: "z", count: 40))\r\ncontent-length: 12\r\n\r\n"
        guard case let .head(parsed, _) = try parser.parse(Array(head.utf8), from: 0) else {
            Issue.record("incomplete head")
            return
        }
        #expect(parsed.framing == .length(12))
        #expect(parsed.headers["X-Long-Name-Header"] == String(repeating: "z", count: 40))
    }
}
