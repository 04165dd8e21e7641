import TestThreads
import Testing
@testable import HTTPServer

/// The request head parser and body decoder on their own.
@Suite(.ownThreads) struct HeadParserTests {
    let parser = HTTPHeadParser(limits: HTTPServerLimits())

    func parse(_ text: String) throws(HTTPParseError) -> (HTTPRequestHead, consumed: Int)? {
        switch try parser.parse(Array(text.utf8), from: 0) {
        case .needMoreData: return nil
        case let .head(head, consumed): return (head, consumed)
        }
    }

    @Test func crlfHead() throws {
        let text = "GET /a?b=c HTTP/1.1\r\nHost: example\r\nX-Two:  spaced value \t\r\n\r\nNEXT"
        let (head, consumed) = try #require(try parse(text))
        #expect(head.method == .get)
        #expect(head.target == "/a?b=c")
        #expect(head.version == .http1_1)
        #expect(head.headers["host"] == "example")
        #expect(head.headers["X-Two"] == "spaced value")
        #expect(head.framing == .none)
        #expect(consumed == text.utf8.count - 4)
    }

    @Test func bareLFLineEndingsAreAccepted() throws {
        let text = "POST /x HTTP/1.1\nHost: example\nContent-Length: 3\n\nabc"
        let (head, consumed) = try #require(try parse(text))
        #expect(head.method == .post)
        #expect(head.headers["Host"] == "example")
        #expect(head.framing == .length(3))
        #expect(consumed == text.utf8.count - 3)

        let mixed = "GET / HTTP/1.1\r\nHost: a\n\r\n"
        let (mixedHead, mixedConsumed) = try #require(try parse(mixed))
        #expect(mixedHead.headers["Host"] == "a")
        #expect(mixedConsumed == mixed.utf8.count)
    }

    @Test func leadingEmptyLinesAreSkipped() throws {
        let text = "\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"
        let (head, consumed) = try #require(try parse(text))
        #expect(head.target == "/")
        #expect(consumed == text.utf8.count)
    }

    @Test func partialHeadNeedsMoreData() throws {
        let text = "GET / HTTP/1.1\r\nHost: a\r\n\r\n"
        for end in 0..<text.utf8.count {
            let prefix = String(decoding: Array(text.utf8)[0..<end], as: UTF8.self)
            #expect(try parse(prefix) == nil, "prefix of \(end) bytes")
        }
    }

    @Test func obsFoldIsRejected() {
        #expect(throws: HTTPParseError.malformedHeader) {
            try parse("GET / HTTP/1.1\r\nHost: a\r\nX-Long: one\r\n two\r\n\r\n")
        }
        #expect(throws: HTTPParseError.malformedHeader) {
            try parse("GET / HTTP/1.1\r\nHost: a\r\nX-Long: one\r\n\ttwo\r\n\r\n")
        }
    }

    @Test func malformedHeadersAreRejected() {
        for text in [
            "GET / HTTP/1.1\r\nHost : a\r\n\r\n",  // space before colon
            "GET / HTTP/1.1\r\nHost a\r\n\r\n",  // no colon
            "GET / HTTP/1.1\r\n: a\r\nHost: a\r\n\r\n",  // empty name
        ] {
            #expect(throws: HTTPParseError.malformedHeader, "\(text.debugDescription)") { try parse(text) }
        }
    }

    @Test func duplicateDifferingContentLengthIsRejected() throws {
        #expect(throws: HTTPParseError.invalidContentLength) {
            try parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n")
        }
        #expect(throws: HTTPParseError.invalidContentLength) {
            try parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 6\r\n\r\n")
        }
        #expect(throws: HTTPParseError.invalidContentLength) {
            try parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n")
        }
        // Repeating the same value is allowed (RFC 9112 §6.3).
        let (head, _) = try #require(try parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5, 5\r\n\r\n"))
        #expect(head.framing == .length(5))
    }

    @Test func framingConflictsAndEncodings() throws {
        #expect(throws: HTTPParseError.conflictingFraming) {
            try parse("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n")
        }
        #expect(throws: HTTPParseError.unsupportedTransferEncoding) {
            try parse("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")
        }
        let (head, _) = try #require(try parse("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n"))
        #expect(head.framing == .chunked)
    }

    @Test func emptyTransferEncodingIsRejected() {
        // An empty Transfer-Encoding must not fall back to Content-Length (RFC 9112 §6.1).
        #expect(throws: HTTPParseError.conflictingFraming) {
            try parse("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \r\nContent-Length: 5\r\n\r\n")
        }
        #expect(throws: HTTPParseError.invalidTransferEncoding) {
            try parse("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n")
        }
        #expect(throws: HTTPParseError.invalidTransferEncoding) {
            try parse("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ,\r\n\r\n")
        }
    }

    @Test func transferEncodingInHTTP10IsRejected() {
        // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing.
        #expect(throws: HTTPParseError.transferEncodingInHTTP10) {
            try parse("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n")
        }
        #expect(throws: HTTPParseError.transferEncodingInHTTP10) {
            try parse("POST / HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n")
        }
    }

    @Test func moreThanOneHostIsRejected() {
        // RFC 9112 §3.2: more than one Host field line is 400, whatever the values.
        for text in [
            "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n",
            "GET / HTTP/1.0\r\nHost: a\r\nHOST: b\r\n\r\n",
        ] {
            #expect(throws: HTTPParseError.multipleHosts, "\(text.debugDescription)") { try parse(text) }
        }
    }

    @Test func versionsHostAndExpect() throws {
        #expect(throws: HTTPParseError.unsupportedVersion) { try parse("GET / HTTP/2.0\r\nHost: a\r\n\r\n") }
        #expect(throws: HTTPParseError.missingHost) { try parse("GET / HTTP/1.1\r\n\r\n") }
        let (old, _) = try #require(try parse("GET / HTTP/1.0\r\n\r\n"))
        #expect(old.version == .http1_0)
        let (expecting, _) = try #require(
            try parse("PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\n"))
        #expect(expecting.expectsContinue)
    }

    @Test func requestLinesNeedExactlyTwoSpaces() throws {
        for line in ["GET  / HTTP/1.1", "GET / HTTP/1.1 ", " GET / HTTP/1.1", "GET /HTTP/1.1", "GET / HTTP/1.1 x", "G(T / HTTP/1.1",
                     "GET http://example/ HTTP/1.1", "GET /a\u{7F} HTTP/1.1", "GET / FTP/1.1"] {
            #expect(throws: HTTPParseError.malformedRequestLine, "\(line.debugDescription)") {
                try parse(line + "\r\nHost: a\r\n\r\n")
            }
        }
        let (extensionMethod, _) = try #require(try parse("PURGE /x HTTP/1.1\r\nHost: a\r\n\r\n"))
        #expect(extensionMethod.method.rawValue == "PURGE")
        let (asterisk, _) = try #require(try parse("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"))
        #expect(asterisk.target == "*")
        #expect(throws: HTTPParseError.malformedRequestLine) { try parse("OPTIONS ** HTTP/1.1\r\nHost: a\r\n\r\n") }
    }

    @Test func keepAliveFollowsVersionAndConnection() throws {
        let cases: [(String, Bool)] = [
            ("GET / HTTP/1.1\r\nHost: a\r\n\r\n", true),
            ("GET / HTTP/1.1\r\nHost: a\r\nCookie: c\r\n\r\n", true),
            ("GET / HTTP/1.1\r\nHost: a\r\nconnection: Close\r\n\r\n", false),
            ("GET / HTTP/1.1\r\nConnection: upgrade, close\r\nHost: a\r\n\r\n", false),
            ("GET / HTTP/1.0\r\n\r\n", false),
            ("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true),
        ]
        for (text, keepAlive) in cases {
            let (head, _) = try #require(try parse(text))
            #expect(head.wantsKeepAlive == keepAlive, "\(text.debugDescription)")
        }
    }

    @Test func framingHostAndExpectAreFoundWhateverElseIsSent() throws {
        // Other fields with the same first letters must not hide or fake the ones that matter.
        #expect(throws: HTTPParseError.missingHost) { try parse("GET / HTTP/1.1\r\nHx: a\r\nHosts: b\r\n\r\n") }
        let text = "POST / HTTP/1.1\r\nCookie: c\r\nhost: a\r\nTE: trailers\r\ncontent-length: 5\r\nExpect: 100-continue\r\n\r\n"
        let (head, _) = try #require(try parse(text))
        #expect(head.framing == .length(5))
        #expect(head.expectsContinue)
        let (plain, _) = try #require(try parse("GET / HTTP/1.1\r\nHost: a\r\nCookie: c\r\nEtag: x\r\n\r\n"))
        #expect(plain.framing == .none)
        #expect(!plain.expectsContinue)
        let (chunked, _) = try #require(try parse("POST / HTTP/1.1\r\nHost: a\r\ntransfer-encoding: chunked\r\n\r\n"))
        #expect(chunked.framing == .chunked)
    }

    @Test func limitsAreEnforced() {
        var limits = HTTPServerLimits()
        limits.maxRequestLineBytes = 32
        limits.maxHeadBytes = 128
        limits.maxHeaderCount = 2
        let parser = HTTPHeadParser(limits: limits)
        func parse(_ text: String) throws(HTTPParseError) { _ = try parser.parse(Array(text.utf8), from: 0) }
        #expect(throws: HTTPParseError.requestLineTooLong) { try parse("GET /\(String(repeating: "a", count: 40)) HTTP/1.1\r\n\r\n") }
        #expect(throws: HTTPParseError.requestLineTooLong) { try parse("GET /\(String(repeating: "a", count: 40))") }
        #expect(throws: HTTPParseError.tooManyHeaders) { try parse("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n") }
        #expect(throws: HTTPParseError.headTooLarge) {
            try parse("GET / HTTP/1.1\r\nHost: a\r\nA: \(String(repeating: "x", count: 200))\r\n\r\n")
        }
        #expect(throws: HTTPParseError.headTooLarge) {
            try parse("GET / HTTP/1.1\r\nHost: a\r\nA: \(String(repeating: "x", count: 200))")
        }
    }
}

@Suite(.ownThreads) struct BodyDecoderTests {
    /// Feeds `input` to a decoder `step` bytes at a time, the way a connection would.
    func decode(_ input: String, framing: HTTPRequestHead.BodyFraming, limit: Int = 1024, step: Int = .max)
        throws(HTTPParseError) -> (body: String, consumed: Int, complete: Bool)
    {
        var decoder = try HTTPBodyDecoder(framing: framing, limit: limit)
        let all = Array(input.utf8)
        var buffer: [UInt8] = []
        var consumed = 0
        var offset = 0
        while offset < all.count && !decoder.isComplete {
            let end = min(all.count, offset + min(step, all.count))
            buffer.append(contentsOf: all[offset..<end])
            offset = end
            consumed += try decoder.consume(buffer, from: consumed)
        }
        let complete = decoder.isComplete
        return (String(decoding: decoder.takeBody(), as: UTF8.self), consumed, complete)
    }

    @Test(arguments: [1, 2, 3, 7, Int.max])
    func chunkExtensionsAreIgnored(step: Int) throws {
        let input = "5;name=value\r\nhello\r\n1 ; quoted=\"a;b\"\r\n,\r\n6;x\r\n world\r\n0;last=yes\r\nTrailer: t\r\n\r\nNEXT"
        let result = try decode(input, framing: .chunked, step: step)
        #expect(result.complete)
        #expect(result.body == "hello, world")
        #expect(result.consumed == input.utf8.count - 4)
    }

    @Test(arguments: [
        "3\nabc\r\n0\r\n\r\n",  // size line
        "3\r\nabc\n0\r\n\r\n",  // after the data
        "3\r\nabc\r\n0\n\r\n",  // last chunk
        "3\r\nabc\r\n0\r\nX-T: 1\n\r\n",  // trailer field
        "3\r\nabc\r\n0\r\n\n",  // end of trailers
    ])
    func bareLFInChunkLinesIsRejected(input: String) {
        // RFC 9112 §7.1: chunk lines end in CRLF; a bare LF is where proxies disagree.
        #expect(throws: HTTPParseError.malformedChunk, "\(input.debugDescription)") {
            try decode(input, framing: .chunked)
        }
    }

    @Test(arguments: [
        "2 0\r\nab\r\n0\r\n\r\n",  // a second number after a space
        "2\t0\r\nab\r\n0\r\n\r\n",
        "2 x\r\nab\r\n0\r\n\r\n",
        "2;\r\nab\r\n0\r\n\r\n",  // extension without a name
        "2;=v\r\nab\r\n0\r\n\r\n",
        "2;a=\r\nab\r\n0\r\n\r\n",  // '=' without a value
        "2;a b\r\nab\r\n0\r\n\r\n",
        "2;a=\"open\r\nab\r\n0\r\n\r\n",  // unterminated quoted string
        "2;a=\"x\"y\r\nab\r\n0\r\n\r\n",
        "2;a@b\r\nab\r\n0\r\n\r\n",  // not a token
    ])
    func chunkSizeLineMustBeSizeThenExtensions(input: String) {
        // RFC 9112 §7.1.1: chunk-size [ chunk-ext ], chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS value ] ).
        #expect(throws: HTTPParseError.malformedChunk, "\(input.debugDescription)") {
            try decode(input, framing: .chunked)
        }
    }

    @Test func validChunkExtensionsWithWhitespaceAndQuotesAreAccepted() throws {
        let input = "2 ;a = b ; c=\"q\\\"\\\\ ;d\"\t;e\r\nab\r\n0\r\n\r\n"
        let result = try decode(input, framing: .chunked)
        #expect(result.complete)
        #expect(result.body == "ab")
    }

    @Test func trailerFieldsCountAgainstTheHeadLimits() throws {
        let budget = HTTPBodyDecoder.TrailerLimits(bytes: 40, fields: 2)
        func decode(_ input: String) throws(HTTPParseError) -> Bool {
            var decoder = try HTTPBodyDecoder(framing: .chunked, limit: 1024, trailerLimits: budget)
            _ = try decoder.consume(Array(input.utf8), from: 0)
            return decoder.isComplete
        }
        #expect(try decode("1\r\na\r\n0\r\nA: 1\r\nB: 2\r\n\r\n"))
        #expect(throws: HTTPParseError.tooManyHeaders) { try decode("0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n") }
        #expect(throws: HTTPParseError.headTooLarge) { try decode("0\r\nA: \(String(repeating: "x", count: 40))\r\n\r\n") }
        // Still arriving, but already over the budget: refused without waiting for the end.
        #expect(throws: HTTPParseError.headTooLarge) { try decode("0\r\nA: 1\r\nB-\(String(repeating: "x", count: 60))") }
        #expect(throws: HTTPParseError.malformedHeader) { try decode("0\r\nno colon\r\n\r\n") }
    }

    /// A head that used all of the head limits still gets its chunked body: the empty line
    /// that ends the (empty) trailer section costs nothing.
    @Test func theLastEmptyLineIsNotATrailerField() throws {
        var decoder = try HTTPBodyDecoder(framing: .chunked, limit: 1024, trailerLimits: .init(bytes: 0, fields: 0))
        _ = try decoder.consume(Array("2\r\nab\r\n0\r\n\r\n".utf8), from: 0)
        #expect(decoder.isComplete)
    }

    @Test func contentLengthBodyStopsAtLength() throws {
        let result = try decode("abcdefNEXT", framing: .length(6), step: 4)
        #expect(result.complete)
        #expect(result.body == "abcdef")
        #expect(result.consumed == 6)
    }

    @Test func malformedChunksAreRejected() {
        for input in ["g\r\n", "5\r\nhelloX\r\n", "\r\n", "1234567890abcdef0\r\n"] {
            #expect(throws: HTTPParseError.malformedChunk, "\(input.debugDescription)") {
                try decode(input, framing: .chunked)
            }
        }
    }

    @Test func limitsAreEnforced() {
        #expect(throws: HTTPParseError.bodyTooLarge(limit: 10)) { try decode("", framing: .length(11), limit: 10) }
        #expect(throws: HTTPParseError.bodyTooLarge(limit: 10)) {
            try decode("6\r\nabcdef\r\n5\r\nghijk\r\n0\r\n\r\n", framing: .chunked, limit: 10)
        }
        #expect(throws: Never.self) { try decode("5\r\nabcde\r\n5\r\nfghij\r\n0\r\n\r\n", framing: .chunked, limit: 10) }
    }
}
