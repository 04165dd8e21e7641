import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Every route's real answers validate against the response schemas in `openapi.yaml`
/// (checked by `jsonschema`, Draft 2020-12, as OpenAPI 3.1 uses).
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct ResponseSchemaTests {
    struct Sample {
        var method: String
        var template: String
        var path: String
        var status: Int
        var contentType: String
        var body: String?
    }

    /// The checker: a Python script (jsonschema has no Swift counterpart here), found from this file.
    static let checker = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../scripts/check-response-schema.py").standardized.path

    @Test func responsesMatchTheSpec() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let port = app.port
        var samples: [Sample] = []
        let events = try SSEClient(port: port)
        // The same stream through the per-library copy, and one over two libraries (created
        // below, so it starts once `jazz` exists: opened then).
        let libraryEvents = try SSEClient(port: port, path: "/libraries/default/events")
        var multiEvents: SSEClient?

        @discardableResult
        func call(_ method: String, _ template: String, _ path: String, json: String? = nil, body: String? = nil,
                  contentType: String? = nil, headers: [String: String] = [:]) throws -> RawHTTPClient.Response {
            var allHeaders = headers
            if let json { allHeaders["Content-Type"] = "application/json"; _ = json }
            if let contentType { allHeaders["Content-Type"] = contentType }
            let response = try RawHTTPClient.request(port: port, method: method, path: path, headers: allHeaders,
                                                     body: Array((json ?? body ?? "").utf8))
            let type = response.header("Content-Type") ?? ""
            samples.append(Sample(method: method, template: template, path: path, status: response.status, contentType: type,
                                  body: response.body.isEmpty ? nil : (type.contains("json") ? response.text : nil)))
            return response
        }

        try call("GET", "/", "/")
        try call("GET", "/healthz", "/healthz")
        try call("GET", "/readyz", "/readyz")
        try call("GET", "/openapi.yaml", "/openapi.yaml")
        try call("GET", "/metrics", "/metrics")
        try call("GET", "/albums", "/albums")
        try call("GET", "/albums", "/albums?limit=1")
        try call("GET", "/albums", "/albums?limit=-5")
        let created = try call("POST", "/albums", "/albums", json: #"{"title": "Schema", "artist": "Checker", "year": "2001"}"#)
        let id = try #require(try created.json()["id"] as? String)
        try call("POST", "/albums", "/albums", json: #"{"artist": 5}"#)
        try call("GET", "/albums/{id}", "/albums/\(id)")
        try call("GET", "/albums/{id}", "/albums/NOPE")
        try call("PATCH", "/albums/{id}", "/albums/\(id)", body: #"{"genre": "Jazz"}"#, contentType: "application/merge-patch+json")
        try call("GET", "/albums/{id}/table", "/albums/\(id)/table")
        try call("POST", "/albums/{id}/move", "/albums/\(id)/move", json: #"{"index": 0}"#)
        try call("POST", "/albums/{id}/move", "/albums/\(id)/move", json: #"{"index": 999}"#)
        try call("POST", "/batch", "/batch", json: #"{"atomic": false, "operations": [{"op": "add", "album": {"title": "B", "artist": "C"}}, {"op": "update", "ref": 0, "patch": {"year": 1999}}, {"op": "move", "id": "\#(id)", "index": 99}, {"op": "delete", "id": "01HZY8Q6V9T3X2K7M4N5P6R7S8"}, {"op": "delete", "index": 0}]}"#)
        try call("POST", "/batch", "/batch", json: #"{"operations": [{"op": "delete", "id": "01HZY8Q6V9T3X2K7M4N5P6R7S8"}]}"#)
        try call("POST", "/batch", "/batch", json: #"{"operations": [{"op": "update", "id": "\#(id)", "patch": {"year": 1999}, "ifMatch": "\"nope\""}]}"#)
        try call("POST", "/batch", "/batch", json: #"{"operations": [{"op": "add", "album": {"title": ""}}]}"#)
        try call("GET", "/albums/{id}/cover", "/albums/\(id)/cover")
        try call("DELETE", "/albums/{id}/cover", "/albums/\(id)/cover")
        try call("GET", "/albums/at/{index}", "/albums/at/0")
        try call("GET", "/albums/at/{index}", "/albums/at/999")
        try call("GET", "/undo", "/undo")
        try call("POST", "/undo", "/undo")
        try call("DELETE", "/albums/at/{index}", "/albums/at/0")
        try call("DELETE", "/albums/{id}", "/albums/\(id)")
        try call("GET", "/state", "/state")
        try call("PUT", "/state", "/state", json: #"{"currentAlbumIndex": 1}"#)
        let archive = try call("GET", "/archive", "/archive")
        try call("PUT", "/archive", "/archive", json: archive.text)
        try call("POST", "/api/addAlbum", "/api/addAlbum", json: #"{"title": "Tutorial", "artist": "App"}"#)
        try call("POST", "/api/deleteAlbum", "/api/deleteAlbum", body: "0", contentType: "text/plain")
        try call("GET", "/changes", "/changes?since=0")
        try call("GET", "/changes", "/changes?since=999999")
        try call("POST", "/views", "/views", json: #"{"id": "all", "sources": ["default"], "filter": {"yearFrom": 1900}}"#)
        try call("POST", "/views", "/views", json: #"{"id": "Bad", "sources": ["nope"]}"#)
        try call("POST", "/views", "/views", json: #"{"id": "all", "sources": ["default"]}"#)
        try call("GET", "/views", "/views")
        try call("PATCH", "/views/{view}", "/views/all", json: #"{"name": "All"}"#)
        try call("PATCH", "/views/{view}", "/views/all", json: #"{"sources": []}"#)
        try call("GET", "/views/{view}", "/views/all")
        try call("GET", "/views/{view}", "/views/none")
        try call("POST", "/views/{view}/albums", "/views/all/albums?index=0", json: #"{"title": "Viewed", "artist": "Through", "year": 1999}"#)
        try call("GET", "/views/{view}/albums", "/views/all/albums?limit=1&count=true")
        try call("GET", "/views/{view}/albums", "/views/all/albums?sort=title")
        try call("GET", "/views/{view}/albums", "/views/none/albums")
        try call("GET", "/views/{view}/albums/at/{index}", "/views/all/albums/at/0")
        try call("GET", "/views/{view}/albums/at/{index}", "/views/all/albums/at/999")
        try call("DELETE", "/views/{view}/albums/at/{index}", "/views/all/albums/at/0")
        try call("DELETE", "/views/{view}", "/views/all")
        try call("GET", "/docs/", "/docs/")
        try call("GET", "/docs/{file}", "/docs/docs.css")
        try call("GET", "/docs", "/docs")
        try call("POST", "/libraries", "/libraries", json: #"{"id": "jazz", "name": "Jazz"}"#)
        try call("POST", "/libraries", "/libraries", json: #"{"id": "jazz", "name": "Again"}"#)
        try call("GET", "/libraries", "/libraries")
        try call("GET", "/libraries/{lib}", "/libraries/jazz")
        try call("PATCH", "/libraries/{lib}", "/libraries/jazz", json: #"{"name": "Jazz & Blues"}"#)
        multiEvents = try SSEClient(port: port, query: "?library=default&library=jazz")
        let inJazz = try call("POST", "/libraries/{lib}/albums", "/libraries/jazz/albums", json: #"{"title": "Kind of Blue", "artist": "Miles Davis", "year": 1959}"#)
        let jazzID = try #require(try inJazz.json()["id"] as? String)
        try call("GET", "/libraries/{lib}/albums", "/libraries/jazz/albums?count=true")
        try call("GET", "/libraries/{lib}/albums/{id}", "/libraries/jazz/albums/\(jazzID)")
        try call("GET", "/libraries/{lib}/albums/at/{index}", "/libraries/jazz/albums/at/0")
        try call("POST", "/albums/{id}/move", "/albums/\(jazzID)/move", json: #"{"index": 0, "library": "default"}"#)
        try call("POST", "/libraries/{lib}/batch", "/libraries/default/batch",
                 json: #"{"atomic": false, "operations": [{"op": "move", "id": "\#(jazzID)", "library": "jazz"}, {"op": "move", "id": "\#(jazzID)", "library": "nope"}]}"#)
        try call("POST", "/batch", "/batch", json: #"{"operations": [{"op": "move", "id": "\#(id)", "library": "nope"}]}"#)
        try call("POST", "/undo", "/undo")
        try call("GET", "/libraries/{lib}/changes", "/libraries/jazz/changes?since=0")
        try call("GET", "/libraries/{lib}/undo", "/libraries/jazz/undo")
        try call("GET", "/libraries/{lib}/state", "/libraries/jazz/state")
        try call("DELETE", "/libraries/{lib}", "/libraries/jazz")
        try call("GET", "/libraries/{lib}", "/libraries/jazz")
        try call("GET", "/albums", "/albums?format=csv")
        try call("GET", "/albums", "/albums?format=csv&limit=5")
        try call("POST", "/albums/import", "/albums/import", body: "title,artist,Label\nImported,Someone,EMI\n", contentType: "text/csv")
        try call("POST", "/albums/import", "/albums/import", body: "title,artist\n,Nobody\n", contentType: "text/csv")
        try call("POST", "/albums/import", "/albums/import", body: "title,artist\n", contentType: "text/csv")
        try call("POST", "/albums/import", "/albums/import", json: "{}")
        try call("POST", "/libraries/{lib}/albums/import", "/libraries/default/albums/import", body: "title,artist\nA,B\n", contentType: "text/csv")
        try call("GET", "/albums", "/albums?cursor=nonsense")
        try call("GET", "/albums", "/albums?sort=nope")
        try call("GET", "/settings", "/settings")
        try call("PATCH", "/settings", "/settings", body: #"{"access": {"attemptLimit": 6}}"#, contentType: "application/merge-patch+json")
        try call("PATCH", "/settings", "/settings", body: #"{"nope": 1}"#, contentType: "application/merge-patch+json")

        // /events: the head, and every event the calls above published (read to the end of
        // the stream, which the shutdown closes with `server.shutdown`), plus a
        // `library.outdated` and the events of an archive import and a cover fetch.
        samples.append(Sample(method: "GET", template: "/events", path: "/events", status: events.head.status,
                              contentType: events.head.header("Content-Type") ?? "", body: nil))
        let outdated = try SSEClient(port: port, lastEventID: "not-a-version")
        var streamed: [(name: String, data: String)] = []
        if let first = try outdated.next() { streamed.append((first.name, first.data)) }
        try call("PUT", "/archive", "/archive", json: archive.text)
        try call("POST", "/albums", "/albums", json: #"{"title": "Covered", "artist": "Nobody", "coverUrl": "http://127.0.0.1:9/none.png"}"#)
        let covered = try #require(samples.last.flatMap { $0.body }.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }?["id"] as? String)
        try call("GET", "/albums/{id}/cover", "/albums/\(covered)/cover")
        let outdatedInLibrary = try SSEClient(port: port, lastEventID: "not-a-version", path: "/libraries/jazz/events")
        app.shutdown()
        while let event = try events.next() { streamed.append((event.name, event.data)) }
        var copied: [(name: String, data: String, template: String)] = []
        for stream in [libraryEvents, outdatedInLibrary] {
            while let event = try stream.next() { copied.append((event.name, event.data, "/libraries/{lib}/events")) }
        }
        while let event = try multiEvents?.next() { copied.append((event.name, event.data, "/events")) }
        #expect(Set(copied.filter { $0.template != "/events" }.map(\.name)).isSuperset(of: ["album.added", "library.outdated", "server.shutdown"]),
                "\(copied.map(\.name))")
        #expect(copied.contains { $0.template == "/events" && $0.data.contains("\"library\":\"jazz\"") }, "the two-library stream")
        let names = Set(streamed.map(\.name))
        for name in ["album.added", "album.updated", "album.deleted", "album.moved", "state.changed", "library.replaced",
                     "settings.changed", "cover.failed", "library.outdated", "server.shutdown"] {
            #expect(names.contains(name), "no \(name) event was seen")
        }

        try Self.verify(samples, events: streamed.map { ($0.name, $0.data, "/events") } + copied)
    }

    /// Runs the checker over `samples` (and SSE `events`: name, data and the stream's path
    /// template); a problem is an issue.
    static func verify(_ samples: [Sample], events: [(name: String, data: String, template: String)] = []) throws {
        let directory = try TemporaryDirectory()
        let samplesPath = directory.file("samples.json")
        var json: [[String: Any]] = samples.map { sample -> [String: Any] in
            ["method": sample.method, "template": sample.template, "path": sample.path, "status": sample.status,
             "contentType": sample.contentType, "body": sample.body ?? NSNull()]
        }
        json += events.map { ["event": $0.name, "data": $0.data, "template": $0.template] }
        try JSONSerialization.data(withJSONObject: json, options: [.prettyPrinted]).write(to: URL(fileURLWithPath: samplesPath))
        let specPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../openapi.yaml").standardized.path

        let run = try ChildProcess.run(
            "/usr/bin/env", ["python3", Self.checker, specPath, samplesPath],
            environment: ProcessInfo.processInfo.environment, mergeStderr: true)
        let text = String(decoding: run.stdout, as: UTF8.self)
        #expect(run.status == 0, "\(text)")
        print(text)
    }
}
