import Testing
@testable import HTTPServer

/// The head parser resumes where it stopped (`HTTPHeadScan`): a head that arrives in pieces
/// costs linear work, and gives the same result as the head parsed whole.
@Suite struct IncrementalHeadParserTests {
    /// Feeds `bytes` to one scan `step` bytes at a time, as a connection does read by read.
    /// Returns the head (or nil if it never completed) and the bytes the scan examined.
    static func trickle(
        _ bytes: [UInt8], step: Int, parser: HTTPHeadParser
    ) throws(HTTPParseError) -> (head: HTTPRequestHead, consumed: Int)? {
        var scan = HTTPHeadScan()
        return try trickle(bytes, step: step, parser: parser, scan: &scan)
    }

    static func trickle(
        _ bytes: [UInt8], step: Int, parser: HTTPHeadParser, scan: inout HTTPHeadScan
    ) throws(HTTPParseError) -> (head: HTTPRequestHead, consumed: Int)? {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(bytes.count)
        var next = 0
        while next < bytes.count {
            let end = min(bytes.count, next + step)
            buffer.append(contentsOf: bytes[next..<end])
            next = end
            if case let .head(head, consumed) = try parser.parse(buffer, from: 0, scan: &scan) {
                return (head, consumed)
            }
        }
        return nil
    }

    @Test func aTrickledMaximalHeadIsScannedInLinearWork() throws {
        let limits = HTTPServerLimits()
        let parser = HTTPHeadParser(limits: limits)
        // A head just under maxHeadBytes (32 KiB), in 60 fields of about 500 bytes.
        var text = "GET /trickled HTTP/1.1\r\nHost: test\r\n"
        var field = 0
        while text.utf8.count < limits.maxHeadBytes - 600 {
            text += "X-Field-\(field): \(String(repeating: "v", count: 480))\r\n"
            field += 1
        }
        text += "\r\n"
        let bytes = Array(text.utf8)
        #expect(bytes.count > 31 * 1024)

        var scan = HTTPHeadScan()
        let (head, consumed) = try #require(try Self.trickle(bytes, step: 1, parser: parser, scan: &scan))
        #expect(consumed == bytes.count)
        #expect(head.target == "/trickled")
        #expect(head.headers.count == field + 1)
        // Rescanning from the start on every byte would examine about n²/2 bytes (over 500
        // million here); resuming examines each byte a small constant number of times.
        #expect(scan.bytesExamined <= 4 * bytes.count, "examined \(scan.bytesExamined) bytes for a \(bytes.count)-byte head")
    }

    @Test func aHeadInPiecesParsesAsTheWholeHead() throws {
        var limits = HTTPServerLimits()
        limits.maxRequestLineBytes = 64
        let parser = HTTPHeadParser(limits: limits)
        let heads = [
            "GET /a?b=c HTTP/1.1\r\nHost: example\r\nX-Two: two\r\n\r\nNEXT",
            "\r\n\n\r\nPOST /x HTTP/1.1\nHost: example\nContent-Length: 3\n\nabc",
            "GET / HTTP/1.1\r\nHost: a\n\r\nGET / HTTP/1.1\r\n",
            "GET / HTTP/1.0\r\n\r\n",
        ]
        for text in heads {
            let bytes = Array(text.utf8)
            guard case let .head(whole, wholeConsumed) = try parser.parse(bytes, from: 0) else {
                Issue.record("\(text.debugDescription) did not parse whole")
                continue
            }
            for step in 1...5 {
                let (piecewise, consumed) = try #require(
                    try Self.trickle(bytes, step: step, parser: parser), "\(text.debugDescription) in \(step)-byte pieces")
                #expect(consumed == wholeConsumed, "\(text.debugDescription) in \(step)-byte pieces")
                #expect(piecewise.target == whole.target)
                #expect(piecewise.method == whole.method)
                #expect(piecewise.framing == whole.framing)
                #expect(piecewise.headers.fields.map(\.name) == whole.headers.fields.map(\.name))
                #expect(piecewise.headers.fields.map(\.value) == whole.headers.fields.map(\.value))
            }
        }
    }

    @Test func limitsHoldWhenTheHeadIsTrickled() {
        var limits = HTTPServerLimits()
        limits.maxRequestLineBytes = 32
        limits.maxHeadBytes = 128
        let parser = HTTPHeadParser(limits: limits)
        let longLine = Array("GET /\(String(repeating: "a", count: 40))".utf8)
        #expect(throws: HTTPParseError.requestLineTooLong) { try Self.trickle(longLine, step: 1, parser: parser) }
        let bigHead = Array("GET / HTTP/1.1\r\nHost: a\r\nX: \(String(repeating: "x", count: 200))".utf8)
        #expect(throws: HTTPParseError.headTooLarge) { try Self.trickle(bigHead, step: 1, parser: parser) }
        let emptyLines = [UInt8](repeating: 0x0A, count: 200)
        #expect(throws: HTTPParseError.headTooLarge) { try Self.trickle(emptyLines, step: 3, parser: parser) }
    }

    @Test func theScanStartsAfreshForTheNextHead() throws {
        let parser = HTTPHeadParser(limits: HTTPServerLimits())
        var scan = HTTPHeadScan()
        let first = Array("GET /first HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
        let (one, _) = try #require(try Self.trickle(first, step: 2, parser: parser, scan: &scan))
        #expect(one.target == "/first")
        let second = Array("\r\nGET /second HTTP/1.1\r\nHost: b\r\n\r\n".utf8)
        let (two, consumed) = try #require(try Self.trickle(second, step: 7, parser: parser, scan: &scan))
        #expect(two.target == "/second")
        #expect(consumed == second.count)
    }
}
