import TestThreads
import Testing
@testable import HTTPServer

/// The head parser resumes where it stopped (`HTTPHeadScan`): a head that arrives in pieces
/// costs linear work, and gives the same result as the head parsed whole.
@Suite(.ownThreads) struct IncrementalHeadParserTests {
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

    @Test func resumingAnswersEveryPrefixAsAFreshParseDoes() {
        // Random heads from the bytes that matter to the scans (line ends, separators, a
        // request line's pieces), under small limits so every limit is reached too.
        var limits = HTTPServerLimits()
        limits.maxRequestLineBytes = 24
        limits.maxHeadBytes = 96
        limits.maxHeaderCount = 4
        let parser = HTTPHeadParser(limits: limits)
        let pieces: [[UInt8]] = ["\r", "\n", "\r\n", ":", " ", "a", "GET / HTTP/1.1", "Host: h", "X: yy"].map { Array($0.utf8) }
        var seed: UInt64 = 0x2545_F491_4F6C_DD1D
        func random(_ bound: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(bound))
        }
        func describe(_ parse: () throws(HTTPParseError) -> HTTPHeadParser.Result) -> String {
            do throws(HTTPParseError) {
                switch try parse() {
                case .needMoreData: return "needMoreData"
                case let .head(head, consumed): return "head \(head.target) \(head.headers.fields.map(\.name)) \(consumed)"
                }
            } catch {
                return "error \(error)"
            }
        }
        var heads = 0
        for _ in 0..<2000 {
            var bytes: [UInt8] = []
            // Half of them start as a valid head and end with an empty line, with noise between.
            let wellFormed = random(2) == 0
            if wellFormed { bytes += Array("GET /ok HTTP/1.1\r\nHost: h\r\n".utf8) }
            for _ in 0..<random(wellFormed ? 4 : 30) { bytes += pieces[random(pieces.count)] }
            if wellFormed { bytes += Array("\r\n\r\n".utf8) }
            let step = 1 + random(6)
            var scan = HTTPHeadScan()
            var end = 0
            while end < bytes.count {
                end = min(bytes.count, end + step)
                let prefix = Array(bytes[..<end])
                let resumed = describe { () throws(HTTPParseError) in try parser.parse(prefix, from: 0, scan: &scan) }
                let fresh = describe { () throws(HTTPParseError) in try parser.parse(prefix, from: 0) }
                #expect(resumed == fresh, "\(String(decoding: prefix, as: UTF8.self).debugDescription) in \(step)-byte reads")
                if resumed != "needMoreData" {
                    if resumed.hasPrefix("head ") { heads += 1 }
                    break
                }
            }
        }
        #expect(heads > 0, "the random inputs include complete heads")
    }
}
