#if canImport(Glibc)
import Glibc
#endif
import Essentials
import HTTPServer

/// Structured logs: one JSON object per line on stdout, as container platforms expect.
/// Each line is written with a single `write(2)`, so lines from different threads never mix.
public struct JSONLogger: Sendable {
    public let level: HTTPServer.LogLevel
    private let sink: @Sendable ([UInt8]) -> Void

    public init(level: HTTPServer.LogLevel, sink: (@Sendable ([UInt8]) -> Void)? = nil) {
        self.level = level
        self.sink = sink ?? { line in
            line.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let n = Glibc.write(1, raw.baseAddress! + offset, raw.count - offset)
                    if n <= 0 { return }
                    offset += n
                }
            }
        }
    }

    public func isEnabled(_ level: HTTPServer.LogLevel) -> Bool { level >= self.level }

    /// A field value: logs keep numbers as numbers.
    public enum Value: Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
        case string(String)
        case int(Int)
        public init(stringLiteral value: String) { self = .string(value) }
        public init(integerLiteral value: Int) { self = .int(value) }
    }

    /// Logs `message` with extra fields. `always` lines (start-up, shutdown) are written
    /// whatever the level, since operators and scripts wait for them.
    public func log(_ level: HTTPServer.LogLevel, _ message: String, _ fields: [(String, Value)] = [], always: Bool = false) {
        guard always || isEnabled(level) else { return }
        var json = JSONWriter()
        json.beginObject()
        json.key("time"); json.string(Timestamp.format(milliseconds: Timestamp.nowMilliseconds()))
        json.key("level"); json.string(Self.name(of: level))
        json.key("message"); json.string(message)
        for (key, value) in fields {
            json.key(key)
            switch value {
            case let .string(text): json.string(text)
            case let .int(number): json.number(number)
            }
        }
        json.endObject()
        json.newline()
        sink(json.bytes)
    }

    /// Writes a line that was built elsewhere (the access log builds its own for speed).
    func write(_ line: [UInt8]) { sink(line) }

    static func name(of level: HTTPServer.LogLevel) -> String {
        switch level {
        case .debug: "debug"
        case .info: "info"
        case .warning: "warning"
        case .error: "error"
        }
    }

    /// The adapter the HTTP server takes.
    public var serverLogger: HTTPServer.Logger {
        let logger = self
        return { level, message in logger.log(level, message) }
    }
}
