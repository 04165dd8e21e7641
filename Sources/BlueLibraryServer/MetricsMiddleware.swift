import HTTPServer
import Synchronization

/// Counts every response by route template, method and status, and times it.
///
/// It goes first in the middleware list (outermost), so it sees every answer the router gives:
/// routes, 404 and 405, and whatever inner middleware answers by itself. Each request is
/// counted once, when its response is ready: at once for the fast path, on the worker after
/// the blocking work otherwise. The latency runs from the end of the request head to the
/// response being ready (body reading and worker queueing included; the time to send it is
/// not).
struct MetricsMiddleware: HTTPMiddleware {
    let http: HTTPMetrics

    /// The server's own answers (401 before the body, 413, 408, ...) are counted too.
    var wrapsServerAnswers: Bool { true }

    func handle(_ request: HTTPRequest, context: RequestContext, next: any HTTPResponder) throws -> HTTPReply {
        let reply: HTTPReply
        do {
            reply = try next.respond(to: request, context: context)
        } catch {
            record(status: 500, request.method, context)  // the server renders escaped errors as 500
            throw error
        }
        switch reply {
        case let .response(response):
            record(status: response.status.code, request.method, context)
            return reply
        case let .blocking(work):
            return .blocking { [self] in
                let response: HTTPResponse
                do {
                    response = try work()
                } catch {
                    record(status: 500, request.method, context)
                    throw error
                }
                record(status: response.status.code, request.method, context)
                return response
            }
        }
    }

    private func record(status: Int, _ method: HTTPMethod, _ context: RequestContext) {
        http.record(routeIndex: context.routeIndex, pattern: context.routePattern, method: method, status: status,
                    duration: ContinuousClock.now - context.receivedAt)
    }
}

/// `bluelibrary_http_requests_total` and `bluelibrary_http_request_duration_seconds`.
///
/// Label sets are bounded: `route` is a route pattern of the router or `unmatched` (404, 405),
/// `method` one of the standard methods or `other`, `status` a status code. Every
/// (route, method) series is created at init from the router builder's route table
/// (GET routes also get HEAD, which they answer), so recording a request takes no lock: one
/// lookup in an immutable table, then relaxed atomic adds. Only a status code outside the
/// common set below goes through a per-series mutex.
final class HTTPMetrics: Sendable {
    static let unmatched = "unmatched"
    static let methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
    static let otherMethod = "other"

    /// Status codes with a preallocated atomic counter in every series.
    static let commonStatuses: [Int] = [
        200, 201, 202, 204, 206, 301, 302, 303, 304, 307, 308,
        400, 401, 403, 404, 405, 406, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 422, 428, 429, 431,
        500, 501, 502, 503, 504, 505,
    ]
    /// status code → index in `commonStatuses`, or -1.
    private static let statusSlots: [Int8] = {
        var slots = [Int8](repeating: -1, count: 600)
        for (index, status) in commonStatuses.enumerated() { slots[status] = Int8(index) }
        return slots
    }()

    /// One (route, method) pair.
    final class Series: Sendable {
        let route: String
        let method: String
        let duration = MetricHistogram()
        private let statuses: [MetricCounter] = HTTPMetrics.commonStatuses.map { _ in MetricCounter() }
        private let otherStatuses = Mutex<[Int: Int]>([:])

        init(route: String, method: String) {
            self.route = route
            self.method = method
        }

        func record(status: Int, duration elapsed: Duration) {
            let slot = status >= 0 && status < 600 ? Int(HTTPMetrics.statusSlots[status]) : -1
            if slot >= 0 {
                statuses[slot].increment()
            } else {
                otherStatuses.withLock { $0[status, default: 0] += 1 }
            }
            duration.observe(elapsed)
        }

        /// Counts by status, ascending; zeros left out.
        var statusCounts: [(status: Int, count: Int)] {
            var counts = zip(HTTPMetrics.commonStatuses, statuses).map { (status: $0, count: $1.value) }
            counts += otherStatuses.withLock { $0.map { (status: $0.key, count: $0.value) } }
            return counts.filter { $0.count > 0 }.sorted { $0.status < $1.status }
        }
    }

    /// pattern → the series of its methods (a handful, scanned in order); and the same by the
    /// router's route index, which the hot path uses (an array index instead of hashing the
    /// pattern).
    final class Table: Sendable {
        let byPattern: [String: [Series]]
        /// Route index (``RequestContext/routeIndex``) → that route's series (its method, and
        /// HEAD for a GET route without a HEAD route of its own).
        let byRoute: [[Series]]
        let unmatched: [Series]
        let all: [Series]

        init(routes: [(method: HTTPMethod, pattern: String)]) {
            var byPattern: [String: [Series]] = [:]
            var byRoute: [[Series]] = []
            var all: [Series] = []
            for (method, pattern) in routes {
                var methods = [method.rawValue]
                if method == .get, !routes.contains(where: { $0.method == .head && $0.pattern == pattern }) {
                    methods.append("HEAD")
                }
                var routeSeries: [Series] = []
                for name in methods {
                    let series = Series(route: pattern, method: name)
                    byPattern[pattern, default: []].append(series)
                    routeSeries.append(series)
                    all.append(series)
                }
                byRoute.append(routeSeries)
            }
            self.byRoute = byRoute
            let unmatched = (HTTPMetrics.methods + [HTTPMetrics.otherMethod]).map {
                Series(route: HTTPMetrics.unmatched, method: $0)
            }
            self.byPattern = byPattern
            self.unmatched = unmatched
            self.all = all + unmatched
        }

        /// The series of route `index` for `method`; nil when the index is not one of the
        /// table's routes (then the pattern decides).
        func series(routeIndex index: Int, method: HTTPMethod) -> Series? {
            guard index >= 0 && index < byRoute.count else { return nil }
            let name = method.rawValue
            for series in byRoute[index] where series.method == name { return series }
            return nil
        }

        func series(pattern: String?, method: HTTPMethod) -> Series? {
            let candidates = pattern.flatMap { byPattern[$0] } ?? unmatched
            let name = method.rawValue
            for series in candidates where series.method == name { return series }
            // Any other method (an extension method, answered 404 or 405) counts as `other`.
            return unmatched.last
        }
    }

    private let table: Table

    /// Creates every series from the routes the router will have.
    init(routes: [(method: HTTPMethod, pattern: String)]) {
        table = Table(routes: routes)
    }

    func record(pattern: String?, method: HTTPMethod, status: Int, duration: Duration) {
        guard let series = table.series(pattern: pattern, method: method) else { return }
        series.record(status: status, duration: duration)
    }

    /// Records by route index when the request matched a route (no hashing), else by pattern.
    func record(routeIndex: Int?, pattern: String?, method: HTTPMethod, status: Int, duration: Duration) {
        if let routeIndex, let series = table.series(routeIndex: routeIndex, method: method), series.route == pattern {
            series.record(status: status, duration: duration)
            return
        }
        record(pattern: pattern, method: method, status: status, duration: duration)
    }

    /// Registers both families with `metrics`.
    func register(with metrics: Metrics) {
        metrics.register(
            "bluelibrary_http_requests_total",
            help: "HTTP responses by route template (or unmatched), method and status code.", kind: .counter
        ) { [self] writer in
            for series in table.all {
                for (status, count) in series.statusCounts {
                    writer.sample("", [("route", series.route), ("method", series.method), ("status", String(status))], count)
                }
            }
        }
        metrics.register(
            "bluelibrary_http_request_duration_seconds",
            help: "Time from the end of the request head to the response being ready, by route template and method.",
            kind: .histogram
        ) { [self] writer in
            for series in table.all where series.duration.observationCount > 0 {
                series.duration.write(to: &writer, labels: [("route", series.route), ("method", series.method)])
            }
        }
    }
}
