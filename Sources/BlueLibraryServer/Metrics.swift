import Essentials
import Synchronization

/// The metrics registry behind `GET /metrics`: metric families in registration order, rendered
/// in the Prometheus text exposition format (version 0.0.4).
///
/// Recording is lock-free: a ``MetricCounter`` or ``MetricHistogram`` is a set of relaxed
/// atomics created once, at registration, for a label set known then. The registry's own lock
/// is taken only to register a family and to render (a scrape), never on the request path.
/// Values owned by other modules (cache sizes, subscriber counts) are sampled at scrape time
/// by the family's `collect` closure.
final class Metrics: Sendable {
    enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    /// Writes the text format; handed to each family's `collect` closure at scrape time.
    struct Writer {
        private(set) var text: String = ""
        let name: String

        init(name: String) { self.name = name }

        /// One sample line: `<name><suffix>{labels} value`.
        mutating func sample(_ suffix: String = "", _ labels: [(String, String)] = [], _ value: Int) {
            line(suffix, labels, String(value))
        }

        mutating func sample(_ suffix: String = "", _ labels: [(String, String)] = [], _ value: Double) {
            line(suffix, labels, Metrics.format(value))
        }

        private mutating func line(_ suffix: String, _ labels: [(String, String)], _ value: String) {
            text += name
            text += suffix
            if !labels.isEmpty {
                text += "{"
                for (index, (key, labelValue)) in labels.enumerated() {
                    if index > 0 { text += "," }
                    text += key
                    text += "=\""
                    text += Metrics.escapeLabelValue(labelValue)
                    text += "\""
                }
                text += "}"
            }
            text += " "
            text += value
            text += "\n"
        }

        mutating func append(_ raw: String) { text += raw }
    }

    private struct Family: Sendable {
        let name: String
        let help: String
        let kind: Kind
        let collect: @Sendable (inout Writer) -> Void
    }

    private let families = Mutex<[Family]>([])

    /// The content type of ``render()``.
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Registers a family whose samples `collect` writes at each scrape.
    func register(_ name: String, help: String, kind: Kind, collect: @escaping @Sendable (inout Writer) -> Void) {
        precondition(Self.isValidName(name), "bad metric name \(name)")
        families.withLock { families in
            precondition(!families.contains { $0.name == name }, "metric \(name) registered twice")
            families.append(Family(name: name, help: help, kind: kind, collect: collect))
        }
    }

    /// A counter with no labels, incremented by its owner.
    func counter(_ name: String, help: String) -> MetricCounter {
        let counter = MetricCounter()
        register(name, help: help, kind: .counter) { $0.sample("", [], counter.value) }
        return counter
    }

    /// A gauge (or counter) with no labels whose value is read at scrape time.
    func sampled(_ name: String, help: String, kind: Kind = .gauge, _ value: @escaping @Sendable () -> Int) {
        register(name, help: help, kind: kind) { $0.sample("", [], value()) }
    }

    /// Every family: `# HELP`, `# TYPE`, then its samples.
    func render() -> String {
        let families = families.withLock { $0 }
        var text = ""
        text.reserveCapacity(8192)
        for family in families {
            text += "# HELP \(family.name) \(Self.escapeHelp(family.help))\n"
            text += "# TYPE \(family.name) \(family.kind.rawValue)\n"
            var writer = Writer(name: family.name)
            family.collect(&writer)
            text += writer.text
        }
        return text
    }

    // MARK: Text format details

    static func isValidName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: ":"):
                true
            default: false
            }
        }
    }

    /// Label values escape `\`, `"` and newline.
    static func escapeLabelValue(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\n") })
        else { return value }
        var out = ""
        for character in value {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }

    /// Help text escapes `\` and newline.
    static func escapeHelp(_ text: String) -> String {
        text.replacingAll("\\", with: "\\\\").replacingAll("\n", with: "\\n")
    }

    /// `+Inf`, `-Inf`, `NaN`, or the shortest decimal that reads back as `value`.
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}

private extension String {
    func replacingAll(_ target: Character, with replacement: String) -> String {
        guard contains(target) else { return self }
        var out = ""
        for character in self { if character == target { out += replacement } else { out.append(character) } }
        return out
    }
}

/// A monotonically increasing count: one relaxed atomic.
final class MetricCounter: Sendable {
    private let count = Atomic<Int>(0)

    func increment(by amount: Int = 1) { count.wrappingAdd(amount, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}

/// A histogram of durations with fixed bucket bounds: one atomic per bucket, plus the count
/// and the sum (in nanoseconds). Observing is a short scan of the bounds and three relaxed
/// atomic adds; the cumulative `le` counts are computed at scrape time.
final class MetricHistogram: Sendable {
    /// Upper bounds in seconds, ascending (`+Inf` is implicit).
    let bounds: [Double]
    private let boundNanoseconds: [Int64]
    /// Non-cumulative: `buckets[i]` counts observations in `(bounds[i-1], bounds[i]]`; the
    /// last one those above every bound.
    private let buckets: [MetricCounter]
    private let count = MetricCounter()
    private let sumNanoseconds = MetricCounter()

    /// Request latency buckets: 0.5 ms to 10 s.
    static let latencyBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    init(bounds: [Double] = MetricHistogram.latencyBuckets) {
        precondition(zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 }, "histogram bounds must ascend")
        self.bounds = bounds
        boundNanoseconds = bounds.map { Int64(($0 * 1e9).rounded()) }
        buckets = (0...bounds.count).map { _ in MetricCounter() }
    }

    func observe(_ duration: Duration) {
        let nanoseconds = Int64(clamping: duration.nanoseconds)
        var index = 0
        while index < boundNanoseconds.count, nanoseconds > boundNanoseconds[index] { index += 1 }
        buckets[index].increment()
        sumNanoseconds.increment(by: Int(nanoseconds))
        count.increment()
    }

    var observationCount: Int { count.value }

    /// Writes `_bucket` lines (cumulative, ending with `+Inf`), `_sum` and `_count`. The
    /// atomics are read one by one, so a scrape racing requests may see `_count` a little
    /// ahead of the buckets; the `+Inf` bucket is written as `_count` so the two always agree,
    /// and never below the finite buckets.
    func write(to writer: inout Metrics.Writer, labels: [(String, String)]) {
        let total = count.value
        var cumulative = 0
        for (bound, bucket) in zip(bounds, buckets) {
            cumulative += bucket.value
            writer.sample("_bucket", labels + [("le", Metrics.format(bound))], min(cumulative, total))
        }
        writer.sample("_bucket", labels + [("le", "+Inf")], total)
        writer.sample("_sum", labels, Double(sumNanoseconds.value) / 1e9)
        writer.sample("_count", labels, total)
    }
}
