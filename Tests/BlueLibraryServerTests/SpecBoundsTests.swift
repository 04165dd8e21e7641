import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// The integer bounds openapi.yaml states (`minimum`, `maximum`) are the server's.
/// For every bounded query and path parameter and every bounded integer of a JSON request body
/// (scripts/spec-bounds.py lists them from the spec), each bound is accepted and one past it is
/// refused, over a real socket: 400 (a parameter) or 422 (a body field) whose `errors` name it
/// and state the range ("from 0 to 2147483647"). An accepted bound may still be refused by
/// the domain for its own reason (an index past the albums, a version newer than the
/// library's), in its own words. A bound the server does not keep, or a new bounded input
/// this test has no request for, fails.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) struct SpecBoundsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized

    struct Bound {
        var method: String
        var path: String
        var name: String
        var location: String
        var mediaType: String?
        var minimum: String?
        var maximum: String?
    }

    /// The bounded inputs the spec states.
    static func bounds() throws -> [Bound] {
        let run = try ChildProcess.run(
            "/usr/bin/env", ["python3", root.appendingPathComponent("scripts/spec-bounds.py").path, root.appendingPathComponent("openapi.yaml").path],
            environment: ProcessInfo.processInfo.environment)
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout)) as? [String: [[String: Any]]])
        let parameters = (listed["parameters"] ?? []).map {
            Bound(method: $0["method"] as? String ?? "", path: $0["path"] as? String ?? "", name: $0["name"] as? String ?? "",
                  location: $0["in"] as? String ?? "", minimum: $0["minimum"] as? String, maximum: $0["maximum"] as? String)
        }
        let fields = (listed["fields"] ?? []).map {
            Bound(method: $0["method"] as? String ?? "", path: $0["path"] as? String ?? "", name: $0["field"] as? String ?? "",
                  location: "body", mediaType: $0["mediaType"] as? String, minimum: $0["minimum"] as? String, maximum: $0["maximum"] as? String)
        }
        return parameters + fields
    }

    /// `text` plus `delta` (one past a bound), in decimal text: exact at the 64-bit limits.
    static func offset(_ text: String, by delta: Int) -> String {
        if let value = Int(text), case (let sum, false) = value.addingReportingOverflow(delta) { return String(sum) }
        return delta > 0 ? String(UInt64(Int64.max) + 1) : "-9223372036854775809"
    }

    /// Bodies that are valid apart from the field under test, by operation. The archive's
    /// `version` is left to ArchiveParsingTests (a whole archive per value).
    static let baseBodies: [String: String] = [
        "POST /albums": #"{"title": "Bound", "artist": "Checker"}"#,
        "PATCH /albums/{id}": "{}",
        "POST /albums/{id}/move": "{}",
        "PUT /state": "{}",
        "POST /views": #"{"id": "VIEW", "sources": ["default"]}"#,
        "PATCH /views/{view}": "{}",
        "POST /views/{view}/albums": #"{"title": "Bound", "artist": "Checker"}"#,
        "POST /api/addAlbum": #"{"title": "Bound", "artist": "Checker"}"#,
        "POST /api/deleteAlbum": "{}",
    ]
    static let notDriven: Set<String> = ["PUT /archive version"]

    /// `body` with `value` set at the dotted `field` (`filter.yearFrom`).
    static func body(_ base: String, _ field: String, _ value: String, viewID: String) -> String {
        let parts = field.split(separator: ".").map(String.init)
        var member = "\"\(parts.last ?? field)\": \(value)"
        for outer in parts.dropLast().reversed() { member = "\"\(outer)\": {\(member)}" }
        let base = base.replacingOccurrences(of: "VIEW", with: viewID)
        return base == "{}" ? "{\(member)}" : String(base.dropLast()) + ", \(member)}"
    }

    /// Whether a refusal states the range: "from 1 to 500", "between 1000 and 9999".
    static func statesRange(_ message: String, _ minimum: String?, _ maximum: String?) -> Bool {
        switch (minimum, maximum) {
        case let (low?, high?): message.contains("\(low) to \(high)") || message.contains("\(low) and \(high)")
        case let (low?, nil): message.contains(low)
        case let (nil, high?): message.contains(high)
        case (nil, nil): false
        }
    }

    @Test func everyStatedBoundIsTheServersBound() throws {
        let app = try InMemoryApp.app()  // answered in process: the subject is each route's bound
        defer { app.shutdown() }
        let routes = InProcessClient(app)
        func call(_ method: String, _ path: String, _ body: String? = nil, type: String = "application/json") throws -> RawHTTPClient.Response {
            routes.request(method: method, path: path, headers: body == nil ? [:] : ["Content-Type": type], body: Array((body ?? "").utf8))
        }
        #expect(try call("POST", "/views", #"{"id": "all", "sources": ["default"]}"#).status == 201)
        let bounds = try Self.bounds()
        #expect(bounds.count >= 20, "spec-bounds.py found \(bounds.count)")
        var views = 0
        for bound in bounds {
            let key = "\(bound.method) \(bound.path)"
            if Self.notDriven.contains("\(key) \(bound.name)") { continue }
            let values = [bound.minimum.map { ($0, true) }, bound.maximum.map { ($0, true) },
                          bound.minimum.map { (Self.offset($0, by: -1), false) }, bound.maximum.map { (Self.offset($0, by: 1), false) }]
                .compactMap { $0 }
            for (value, accepted) in values {
                // An album to address, made fresh: a bound of 0 may delete or move one.
                let id = try #require(try call("POST", "/albums", #"{"title": "Target", "artist": "Checker"}"#).json()["id"] as? String)
                var path = bound.path.replacingOccurrences(of: "{id}", with: id).replacingOccurrences(of: "{view}", with: "all")
                var body: String?
                var type = "application/json"
                switch bound.location {
                case "path":
                    path = path.replacingOccurrences(of: "{\(bound.name)}", with: value)
                case "query":
                    path += "?\(bound.name)=\(value)" + (bound.path == "/changes" && bound.name != "since" ? "&since=0" : "")
                    if bound.method == "POST" { body = Self.baseBodies[key] }
                default:
                    guard let base = Self.baseBodies[key] else {
                        Issue.record("\(key) \(bound.name): no request body for it here; add one to baseBodies")
                        continue
                    }
                    views += 1
                    body = Self.body(base, bound.name, value, viewID: "bound-\(views)")
                    type = bound.mediaType ?? type
                }
                let response = try call(bound.method, path, body, type: type)
                let problem = response.status >= 400 ? (try? response.json()) ?? [:] : [:]
                let errors = problem["errors"] as? [[String: Any]] ?? []
                let named = errors.contains { error in
                    let message = error["message"] as? String ?? ""
                    return error["field"] as? String == bound.name
                        && Self.statesRange(message, bound.minimum, bound.maximum)
                }
                let what = "\(bound.method) \(path) \(body ?? "") -> \(response.status) \(response.text)"
                if accepted {
                    #expect(!named && response.status < 500, "the spec's bound \(value) of \(bound.name) is refused: \(what)")
                } else if bound.location == "body", bound.name.hasSuffix("index"), value.hasPrefix("-") {
                    // A negative position in a body is 400 index-out-of-range, as it always was.
                    #expect(response.status == 400 && problem["type"] as? String == "urn:bluelibrary:problem:index-out-of-range", "\(what)")
                } else {
                    #expect(response.status == (bound.location == "body" ? 422 : 400) && named,
                            "one past the spec's bound, \(value) of \(bound.name) is not refused naming it and its range: \(what)")
                }
            }
        }
    }
}
