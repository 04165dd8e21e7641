import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Every status a route answers is documented for that route: each route of the router's own
/// table gets the bad inputs a client can send (unknown and malformed path parameters, bad
/// query values, no body, a body that is not JSON, a wrong `Content-Type`, a stale `If-Match`,
/// no token and a wrong token while the lock is on, until the lockout), and every answer must
/// be a status the spec lists for that operation, with a body that validates against its schema
/// (scripts/check-response-schema.py). Answered in process by the app on the in-memory store:
/// the subject is what each route answers.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) struct DocumentedStatusTests {
    typealias Sample = ResponseSchemaTests.Sample

    /// What a path parameter is replaced with: a value that exists, one that does not, one
    /// that is malformed.
    static func variants(of pattern: String, album: String, view: String) -> [String] {
        var paths = [pattern]
        let substitutions: [(String, [String])] = [
            ("{lib}", ["default", "nothere", "Bad_Id"]),
            ("{id}", [album, "01HZY8Q6V9T3X2K7M4N5P6R7S8", "not-an-id"]),
            ("{index}", ["0", "999", "x", "-1"]),
            ("{view}", [view, "nothere", "Bad_Id"]),
        ]
        for (name, values) in substitutions where pattern.contains(name) {
            paths = paths.flatMap { path in values.map { path.replacingOccurrences(of: name, with: $0) } }
        }
        return paths
    }

    static let badQueries = [
        "", "?limit=abc", "?limit=0", "?offset=-1", "?count=maybe", "?sort=nope", "?yearFrom=5", "?cursor=garbage",
        "?since=x", "?since=999999", "?index=-1", "?client=a%20b", "?force=perhaps", "?library=Bad_Id", "?lastEventId=9",
        "?size=7", "?size=128",
    ]

    @Test func badInputsOnEveryRouteAnswerOnlyDocumentedStatuses() throws {
        let app = try InMemoryApp.app()
        defer { app.shutdown() }
        let client = InProcessClient(app)
        var samples: [Sample] = []

        func send(_ method: String, _ template: String, _ path: String, body: String? = nil, contentType: String? = nil,
                  headers: [String: String] = [:]) throws {
            var all = headers
            if let contentType { all["Content-Type"] = contentType }
            // A 200 on /events would be a stream that never ends: only its refusals are sampled here.
            if template.hasSuffix("/events"), !path.contains("library=Bad") && !path.contains("/nothere/") && !path.contains("/Bad_Id/") {
                return
            }
            let response = client.request(method: method, path: path, headers: all, body: Array((body ?? "").utf8))
            let type = response.header("Content-Type") ?? ""
            samples.append(Sample(method: method, template: template, path: path, status: response.status, contentType: type,
                                  body: response.body.isEmpty ? nil : (type.contains("json") ? response.text : nil)))
        }

        let created = client.request(method: "POST", path: "/albums", headers: ["Content-Type": "application/json"],
                                                body: Array(#"{"title": "Kept", "artist": "Here"}"#.utf8))
        let album = try #require(try created.json()["id"] as? String)
        _ = client.request(method: "POST", path: "/views", headers: ["Content-Type": "application/json"],
                                      body: Array(#"{"id": "all", "sources": ["default"]}"#.utf8))

        let routes = app.router.routeTable.sorted { ($0.pattern, $0.method.rawValue) < ($1.pattern, $1.method.rawValue) }
        for route in routes {
            let method = route.method.rawValue
            // Deleting what later routes need is left to the end.
            if method == "DELETE" && (route.pattern == "/libraries/{lib}" || route.pattern == "/views/{view}") { continue }
            let hasBody = ["POST", "PUT", "PATCH"].contains(method)
            for path in Self.variants(of: route.pattern, album: album, view: "all") {
                for query in Self.badQueries {
                    try send(method, route.pattern, path + query, body: hasBody ? "{}" : nil, contentType: hasBody ? "application/json" : nil)
                }
                guard hasBody else { continue }
                try send(method, route.pattern, path, body: "")
                try send(method, route.pattern, path, body: "{not json", contentType: "application/json")
                try send(method, route.pattern, path, body: "[1, 2]", contentType: "application/json")
                try send(method, route.pattern, path, body: "title=x", contentType: "application/xml")
                try send(method, route.pattern, path, body: #"{"unknown": true}"#, contentType: "application/json",
                         headers: ["If-Match": "\"stale\"", "Idempotency-Key": "key-1"])
            }
        }
        try send("DELETE", "/views/{view}", "/views/nothere")
        try send("DELETE", "/libraries/{lib}", "/libraries/default")
        try send("DELETE", "/libraries/{lib}", "/libraries/Bad_Id")
        try ResponseSchemaTests.verify(samples)
        #expect(samples.count > 500)
    }

    /// With the lock on, every protected operation answers 401 without the token and 429 once
    /// the address is locked out; both are documented for each of them.
    @Test func withTheLockOnEveryProtectedRouteDocuments401And429() throws {
        let app = try InMemoryApp.app { config in
            config.token = AccessToken("contract-token-0123456789")
        }
        defer { app.shutdown() }
        let client = InProcessClient(app)
        var samples: [Sample] = []
        _ = client.request(method: "PATCH", path: "/settings",
                                      headers: ["Content-Type": "application/json", "Authorization": "Bearer contract-token-0123456789"],
                                      body: Array(#"{"access": {"protectReads": true}}"#.utf8))
        for wrong in [nil, "wrong-token-1", "wrong-token-2", "wrong-token-3", "wrong-token-4", "wrong-token-5", "wrong-token-6"] as [String?] {
            for route in app.router.routeTable {
                let path = route.pattern.replacingOccurrences(of: "{lib}", with: "default")
                    .replacingOccurrences(of: "{id}", with: "01HZY8Q6V9T3X2K7M4N5P6R7S8").replacingOccurrences(of: "{index}", with: "0")
                    .replacingOccurrences(of: "{view}", with: "all")
                // Who-am-I answers a caller without a key (with a wrong one, 401 as anywhere).
                let open = AccessPolicy.isAlwaysOpen(path) || (wrong == nil && route.pattern == "/keys/self")
                var headers = ["Content-Type": "application/json"]
                if let wrong { headers["Authorization"] = "Bearer \(wrong)" }
                let response = client.request(method: route.method.rawValue, path: path, headers: headers,
                                                         body: route.method == .get || route.method == .delete ? [] : Array("{}".utf8))
                if !open { #expect([401, 429].contains(response.status), "\(route.method.rawValue) \(path): \(response.status)") }
                let type = response.header("Content-Type") ?? ""
                samples.append(Sample(method: route.method.rawValue, template: route.pattern, path: path, status: response.status,
                                      contentType: type, body: type.contains("json") ? response.text : nil))
            }
        }
        #expect(samples.contains { $0.status == 429 })
        try ResponseSchemaTests.verify(samples)
    }
}
