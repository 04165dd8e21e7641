import BlueLibraryTestSupport
import Essentials
import Foundation
import HTTPServer
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// A small reader of the Prometheus text format (0.0.4), strict enough to catch what a
/// scraper would reject: every sample line is `name{labels} value`, and every family has
/// `# HELP` and `# TYPE` before its samples.
struct PrometheusText {
    struct Sample {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    struct ParseError: Error, CustomStringConvertible {
        var description: String
    }

    var types: [String: String] = [:]
    var helps: Set<String> = []
    var samples: [Sample] = []

    init(_ text: String) throws {
        guard text.hasSuffix("\n") else { throw ParseError(description: "the text does not end with a newline") }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
            if line.hasPrefix("# HELP ") {
                let parts = line.dropFirst(7).split(separator: " ", maxSplits: 1)
                guard parts.count == 2 else { throw ParseError(description: "bad HELP: \(line)") }
                helps.insert(String(parts[0]))
            } else if line.hasPrefix("# TYPE ") {
                let parts = line.dropFirst(7).split(separator: " ")
                guard parts.count == 2, ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[1]),
                      types[String(parts[0])] == nil
                else { throw ParseError(description: "bad or repeated TYPE: \(line)") }
                types[String(parts[0])] = String(parts[1])
            } else if line.hasPrefix("#") {
                continue
            } else {
                let sample = try Self.sample(line)
                guard let family = family(of: sample.name), helps.contains(family) else {
                    throw ParseError(description: "sample without HELP/TYPE before it: \(line)")
                }
                samples.append(sample)
            }
        }
    }

    /// The family a sample belongs to (a histogram's `_bucket`, `_sum`, `_count` belong to it).
    func family(of name: String) -> String? {
        if types[name] != nil { return name }
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if types[base] == "histogram" || types[base] == "summary" { return base }
        }
        return nil
    }

    static func sample(_ line: Substring) throws -> Sample {
        var rest = line[...]
        let nameEnd = rest.firstIndex { $0 == "{" || $0 == " " } ?? rest.endIndex
        let name = String(rest[..<nameEnd])
        guard let first = name.first, first.isLetter || first == "_" || first == ":",
              name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ":") })
        else { throw ParseError(description: "bad metric name in: \(line)") }
        rest = rest[nameEnd...]
        var labels: [String: String] = [:]
        if rest.first == "{" {
            rest = rest.dropFirst()
            while rest.first != "}" {
                guard let eq = rest.firstIndex(of: "=") else { throw ParseError(description: "bad labels in: \(line)") }
                let key = String(rest[..<eq])
                guard !key.isEmpty, key.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
                else { throw ParseError(description: "bad label name in: \(line)") }
                rest = rest[rest.index(after: eq)...]
                guard rest.first == "\"" else { throw ParseError(description: "unquoted label value in: \(line)") }
                rest = rest.dropFirst()
                var value = ""
                while true {
                    guard let character = rest.first else { throw ParseError(description: "unterminated label in: \(line)") }
                    rest = rest.dropFirst()
                    if character == "\"" { break }
                    if character == "\\" {
                        guard let escaped = rest.first else { throw ParseError(description: "bad escape in: \(line)") }
                        rest = rest.dropFirst()
                        switch escaped {
                        case "\\": value.append("\\")
                        case "\"": value.append("\"")
                        case "n": value.append("\n")
                        default: throw ParseError(description: "bad escape in: \(line)")
                        }
                    } else {
                        value.append(character)
                    }
                }
                guard labels.updateValue(value, forKey: key) == nil else { throw ParseError(description: "repeated label in: \(line)") }
                if rest.first == "," { rest = rest.dropFirst() } else if rest.first != "}" {
                    throw ParseError(description: "bad label separator in: \(line)")
                }
            }
            rest = rest.dropFirst()
        }
        guard rest.first == " " else { throw ParseError(description: "no space before the value in: \(line)") }
        let valueText = rest.dropFirst()
        let value: Double
        switch valueText {
        case "+Inf": value = .infinity
        case "-Inf": value = -.infinity
        case "NaN": value = .nan
        default:
            guard let parsed = Double(valueText) else { throw ParseError(description: "bad value in: \(line)") }
            value = parsed
        }
        return Sample(name: name, labels: labels, value: value)
    }

    /// The value of the one sample named `name` with exactly `labels`; 0 when absent.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double {
        samples.first { $0.name == name && $0.labels == labels }?.value ?? 0
    }

    /// Checks every histogram: per label set, `le` buckets ascending and cumulative, the last
    /// `+Inf`, equal to `_count`, and a `_sum`.
    func checkHistograms() throws {
        for (family, type) in types where type == "histogram" {
            var groups: [[String: String]: [(le: Double, count: Double)]] = [:]
            for sample in samples where sample.name == family + "_bucket" {
                var labels = sample.labels
                guard let le = labels.removeValue(forKey: "le"), let bound = le == "+Inf" ? .infinity : Double(le) else {
                    throw ParseError(description: "\(family) bucket without le")
                }
                groups[labels, default: []].append((bound, sample.value))
            }
            for (labels, buckets) in groups {
                guard buckets.last?.le == .infinity else { throw ParseError(description: "\(family)\(labels) does not end in +Inf") }
                for (a, b) in zip(buckets, buckets.dropFirst()) where !(a.le < b.le && a.count <= b.count) {
                    throw ParseError(description: "\(family)\(labels) buckets not ascending and cumulative")
                }
                let count = samples.first { $0.name == family + "_count" && $0.labels == labels }
                guard let count, count.value == buckets.last!.count else {
                    throw ParseError(description: "\(family)\(labels) +Inf bucket differs from _count")
                }
                guard samples.contains(where: { $0.name == family + "_sum" && $0.labels == labels }) else {
                    throw ParseError(description: "\(family)\(labels) has no _sum")
                }
            }
        }
    }
}

@Suite(.timeLimit(.minutes(2)), .ownThreads) struct MetricsTests {
    static func scrape(_ port: Int) throws -> PrometheusText { try scrape(.port(port)) }

    static func scrape(_ endpoint: Endpoint) throws -> PrometheusText {
        let response = try endpoint.request(path: "/metrics")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
        return try PrometheusText(String(decoding: response.body, as: UTF8.self))
    }

    static func requests(_ route: String, _ method: String, _ status: Int) -> (String, [String: String]) {
        ("bluelibrary_http_requests_total", ["route": route, "method": method, "status": String(status)])
    }

    @Test func outputIsPrometheusTextWithEveryFamily() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        _ = try RawHTTPClient.request(port: app.port, path: "/healthz")
        _ = try RawHTTPClient.request(port: app.port, path: "/no/such/path")
        let text = try Self.scrape(app.port)
        try text.checkHistograms()
        for family in text.types.keys { #expect(text.helps.contains(family), "\(family) has no HELP") }
        for family in text.helps { #expect(text.types[family] != nil, "\(family) has no TYPE") }
        let expected: [String: String] = [
            "bluelibrary_http_requests_total": "counter",
            "bluelibrary_http_request_duration_seconds": "histogram",
            "bluelibrary_http_open_connections": "gauge",
            "bluelibrary_event_subscribers": "gauge",
            "bluelibrary_event_hubs": "gauge",
            "bluelibrary_event_hub_threads": "gauge",
            "bluelibrary_event_hub_thread_limit": "gauge",
            "bluelibrary_event_streams_dropped_total": "counter",
            "bluelibrary_cover_cache_hits_total": "counter",
            "bluelibrary_cover_cache_misses_total": "counter",
            "bluelibrary_cover_cache_evictions_total": "counter",
            "bluelibrary_cover_cache_bytes": "gauge",
            "bluelibrary_cover_upstream_fetches_total": "counter",
            "bluelibrary_cover_variants_total": "counter",
            "bluelibrary_page_cache_hits_total": "counter",
            "bluelibrary_page_cache_misses_total": "counter",
            "bluelibrary_db_reader_waits_total": "counter",
        ]
        for (family, type) in expected { #expect(text.types[family] == type, "\(family)") }
        // The scrape's own connection is open while it is answered.
        #expect(text.value("bluelibrary_http_open_connections") >= 1)
        #expect(text.value("bluelibrary_cover_upstream_fetches_total", ["outcome": "timeout"]) == 0)
        #expect(text.samples.contains { $0.name == "bluelibrary_cover_upstream_fetches_total" && $0.labels == ["outcome": "image"] })
        // Raw paths never become labels.
        #expect(!text.samples.contains { $0.labels["route"]?.contains("no/such") == true })
    }

    @Test func requestsAreCountedByRouteTemplateAndStatus() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let before = try Self.scrape(app.port)
        let n = 7
        for _ in 0..<n { #expect(try RawHTTPClient.request(port: app.port, path: "/healthz").status == 200) }
        for index in 0..<3 { #expect(try RawHTTPClient.request(port: app.port, path: "/nothing/\(index)").status == 404) }
        #expect(try RawHTTPClient.request(port: app.port, method: "POST", path: "/healthz").status == 405)
        #expect(try RawHTTPClient.request(port: app.port, method: "HEAD", path: "/healthz").status == 200)
        for id in ["01ARZ3NDEKTSV4RRFFQ69G5FAV", "01ARZ3NDEKTSV4RRFFQ69G5FAW"] {
            #expect(try RawHTTPClient.request(port: app.port, path: "/albums/\(id)").status == 404)
        }
        let after = try Self.scrape(app.port)
        func delta(_ key: (String, [String: String])) -> Double { after.value(key.0, key.1) - before.value(key.0, key.1) }

        #expect(delta(Self.requests("/healthz", "GET", 200)) == Double(n))
        #expect(delta(Self.requests("/healthz", "HEAD", 200)) == 1)
        #expect(delta(Self.requests("unmatched", "GET", 404)) == 3)
        #expect(delta(Self.requests("unmatched", "POST", 405)) == 1)
        #expect(delta(Self.requests("/albums/{id}", "GET", 404)) == 2)
        // The first scrape is counted by the time of the second.
        #expect(delta(Self.requests("/metrics", "GET", 200)) == 1)
        let durationCount = ("bluelibrary_http_request_duration_seconds_count", ["route": "/healthz", "method": "GET"])
        #expect(delta(durationCount) == Double(n))
        #expect(after.value("bluelibrary_http_request_duration_seconds_bucket",
                            ["route": "/healthz", "method": "GET", "le": "+Inf"]) == after.value(durationCount.0, durationCount.1))
        #expect(after.value("bluelibrary_http_request_duration_seconds_sum", ["route": "/healthz", "method": "GET"]) > 0)
        try after.checkHistograms()
    }

    @Test func pageCacheCountsAHitForARepeatedListRequest() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let before = try Self.scrape(app.port)
        #expect(try RawHTTPClient.request(port: app.port, path: "/albums?limit=2").status == 200)
        #expect(try RawHTTPClient.request(port: app.port, path: "/albums?limit=2").status == 200)
        let after = try Self.scrape(app.port)
        #expect(after.value("bluelibrary_page_cache_misses_total") - before.value("bluelibrary_page_cache_misses_total") == 1)
        #expect(after.value("bluelibrary_page_cache_hits_total") - before.value("bluelibrary_page_cache_hits_total") == 1)
        #expect(after.value("bluelibrary_page_cache_entries") >= 1)
        #expect(after.value(Self.requests("/albums", "GET", 200).0, Self.requests("/albums", "GET", 200).1) == 2)
    }

    @Test func eventSubscribersAreAGauge() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let stream = try RawHTTPClient(port: app.port)
        try stream.send("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
        #expect(try stream.readResponse(isHead: true).status == 200)
        var subscribers = 0.0
        try eventually(pollingEvery: .milliseconds(20)) {
            subscribers = try Self.scrape(app.port).value("bluelibrary_event_subscribers")
            return subscribers == 1
        }
        #expect(subscribers == 1)
    }

    @Test func coverCacheMissThenHitAndFetchOutcomes() throws {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 4096)
        var upstreamRoutes = RouterBuilder()
        upstreamRoutes.add(.get, "/img/{name}", options: .workerPool) { _, context in
            if try context.parameter("name") == "broken.png" { throw HTTPError(.internalServerError, detail: "upstream broke") }
            return HTTPResponse(contentType: "image/png", bytes: png)
        }
        let upstream = try HTTPServer(configuration: .init(host: "127.0.0.1", port: 0, eventLoops: 1, workerThreads: 2),
                                      router: upstreamRoutes.build())
        upstream.start()
        defer { upstream.shutdown(grace: .seconds(1)) }
        let app = try TestApp.make { config in
            config.seed = false
            config.coverAllow = "127.0.0.1"
            config.coverWait = .seconds(5)
        }
        app.start()
        defer { app.shutdown() }

        func addAlbum(_ name: String) throws -> String {
            let body = #"{"title": "Low", "artist": "David Bowie", "coverUrl": "http://127.0.0.1:\#(upstream.port)/img/\#(name)"}"#
            let response = try RawHTTPClient.request(port: app.port, method: "POST", path: "/albums",
                                                     headers: ["Content-Type": "application/json"], body: Array(body.utf8))
            #expect(response.status == 201)
            return try #require(response.json()["id"] as? String)
        }
        func counts() throws -> (hits: Double, misses: Double, text: PrometheusText) {
            let text = try Self.scrape(app.port)
            return (text.value("bluelibrary_cover_cache_hits_total"), text.value("bluelibrary_cover_cache_misses_total"), text)
        }

        let good = try addAlbum("low.png")
        #expect(try RawHTTPClient.request(port: app.port, path: "/albums/\(good)/cover").status == 200)
        // The prefetch on add may have finished first: the first request is a hit or a miss.
        let first = try counts()
        #expect(first.hits + first.misses == 1)
        #expect(try RawHTTPClient.request(port: app.port, path: "/albums/\(good)/cover").status == 200)
        let second = try counts()
        #expect(second.hits == first.hits + 1)
        #expect(second.misses == first.misses)
        #expect(second.text.value("bluelibrary_cover_upstream_fetches_total", ["outcome": "image"]) == 1)
        #expect(second.text.value("bluelibrary_cover_cache_bytes") == Double(png.count))

        let broken = try addAlbum("broken.png")
        #expect(try RawHTTPClient.request(port: app.port, path: "/albums/\(broken)/cover").status == 502)
        let third = try counts()
        #expect(third.misses == second.misses + 1)
        #expect(third.text.value("bluelibrary_cover_upstream_fetches_total", ["outcome": "upstream-status"]) == 1)
        #expect(third.text.value(Self.requests("/albums/{id}/cover", "GET", 502).0,
                                 Self.requests("/albums/{id}/cover", "GET", 502).1) == 1)
    }

    /// Recording through the middleware counts every request exactly once (its cost is printed
    /// for information; timings belong in scripts/bench, not in assertions).
    @Test func recordingCountsEveryRequestOnce() throws {
        let http = HTTPMetrics(routes: [(.get, "/albums"), (.get, "/albums/{id}"), (.post, "/albums")])
        let middleware = MetricsMiddleware(http: http)
        let ok = ClosureResponder { _, _ in HTTPResponse(status: .ok) }
        let request = HTTPRequest(method: .get, target: "/albums/x")
        let context = RequestContext(peerAddress: IPAddress("127.0.0.1")!, routePattern: "/albums/{id}")
        let iterations = 200_000
        let start = ContinuousClock.now
        for _ in 0..<iterations { _ = try middleware.handle(request, context: context, next: ok) }
        let perRequest = (ContinuousClock.now - start) / iterations
        let plain = ContinuousClock.now
        for _ in 0..<iterations { _ = try ok.respond(to: request, context: context) }
        let baseline = (ContinuousClock.now - plain) / iterations
        print("MetricsMiddleware: \(perRequest) per request (bare responder: \(baseline))")

        let metrics = Metrics()
        http.register(with: metrics)
        let text = try PrometheusText(metrics.render())
        try text.checkHistograms()
        #expect(text.value("bluelibrary_http_requests_total", ["route": "/albums/{id}", "method": "GET", "status": "200"]) == Double(iterations))
        #expect(text.value("bluelibrary_http_request_duration_seconds_count", ["route": "/albums/{id}", "method": "GET"]) == Double(iterations))
    }

    @Test func labelValuesAreEscaped() throws {
        let metrics = Metrics()
        metrics.register("test_info", help: "a \\ help\nline", kind: .gauge) { writer in
            writer.sample("", [("value", "a\"b\\c\nd")], 1)
        }
        let text = try PrometheusText(metrics.render())
        #expect(text.value("test_info", ["value": "a\"b\\c\nd"]) == 1)
        #expect(metrics.render().contains("# HELP test_info a \\\\ help\\nline\n"))
    }
}
