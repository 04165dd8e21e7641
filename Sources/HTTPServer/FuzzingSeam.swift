/// The wire parsers as the fuzz targets in `Fuzz/` drive them. Not API: reached only with
/// `@_spi(Fuzzing) import HTTPServer`.
@_spi(Fuzzing) public enum HTTPFuzzingSeam {
    /// What `HTTPHeadParser` made of a complete head.
    public struct Head: Sendable {
        public var method: String
        public var target: String
        public var version: HTTPVersion
        public var headers: HTTPHeaders
        /// The Content-Length, when the body is framed by one.
        public var contentLength: Int?
        public var isChunked: Bool
        public var expectsContinue: Bool
        public var wantsKeepAlive: Bool
        /// Bytes of `buffer[start...]` the head took.
        public var consumed: Int
    }

    /// Parses the head at `buffer[start...]` as a connection does; `nil` while more data is needed.
    public static func parseHead(
        _ buffer: [UInt8], from start: Int, limits: HTTPServerLimits = HTTPServerLimits()
    ) throws(HTTPParseError) -> Head? {
        switch try HTTPHeadParser(limits: limits).parse(buffer, from: start) {
        case .needMoreData:
            return nil
        case let .head(head, consumed):
            return Self.head(head, consumed: consumed)
        }
    }

    /// `HTTPHeadParser` as a connection drives it while a head arrives read by read: each call
    /// resumes the scan where the previous one stopped (`HTTPHeadScan`).
    public struct HeadScanner {
        let parser: HTTPHeadParser
        var scan = HTTPHeadScan()

        public init(limits: HTTPServerLimits = HTTPServerLimits()) {
            parser = HTTPHeadParser(limits: limits)
        }

        /// Parses the head at `buffer[start...]`; call again with the same `start` and more
        /// bytes appended while it returns nil.
        public mutating func parse(_ buffer: [UInt8], from start: Int) throws(HTTPParseError) -> Head? {
            switch try parser.parse(buffer, from: start, scan: &scan) {
            case .needMoreData: return nil
            case let .head(head, consumed): return HTTPFuzzingSeam.head(head, consumed: consumed)
            }
        }
    }

    static func head(_ head: HTTPRequestHead, consumed: Int) -> Head {
        var length: Int?
        if case let .length(n) = head.framing { length = n }
        return Head(
            method: head.method.rawValue, target: head.target, version: head.version, headers: head.headers,
            contentLength: length, isChunked: head.framing == .chunked,
            expectsContinue: head.expectsContinue, wantsKeepAlive: head.wantsKeepAlive, consumed: consumed)
    }

    /// `HTTPBodyDecoder` for a chunked body (or a Content-Length one when `contentLength` is set).
    public struct BodyDecoder {
        var decoder: HTTPBodyDecoder

        public init(contentLength: Int?, limit: Int) throws(HTTPParseError) {
            decoder = try HTTPBodyDecoder(framing: contentLength.map { .length($0) } ?? .chunked, limit: limit)
        }

        /// Consumes what it can from `buffer[start...]`; returns how many bytes it used.
        public mutating func consume(_ buffer: [UInt8], from start: Int) throws(HTTPParseError) -> Int {
            try decoder.consume(buffer, from: start)
        }

        public var isComplete: Bool { decoder.isComplete }
        public mutating func takeBody() -> [UInt8] { decoder.takeBody() }
    }
}
