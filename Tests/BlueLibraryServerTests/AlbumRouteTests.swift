import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Album routes answered in process (no socket) by the app on the in-memory store (`InMemoryApp`):
/// conditional requests, the table view, moves, archive, idempotency, and bad input that
/// must change nothing.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class AlbumRouteTests {
    let app: BlueLibraryApp
    let routes: InProcessClient

    init() throws {
        app = try InMemoryApp.app()
        routes = InProcessClient(app)
    }

    deinit { app.shutdown() }

    func request(_ method: String = "GET", _ path: String, headers: [String: String] = [:], json: String? = nil) throws -> RawHTTPClient.Response {
        var headers = headers
        if json != nil, headers["Content-Type"] == nil { headers["Content-Type"] = "application/json" }
        return routes.request(method: method, path: path, headers: headers, body: Array((json ?? "").utf8))
    }

    func firstID() throws -> String {
        try #require(try request("GET", "/albums/at/0").json()["id"] as? String)
    }

    func allTitles() throws -> [String] {
        (try request("GET", "/albums?limit=500").json()["items"] as? [[String: Any]] ?? []).compactMap { $0["title"] as? String }
    }

    @Test func albumsHaveETagsAndRevalidateWith304() throws {
        let id = try firstID()
        let first = try request("GET", "/albums/\(id)")
        let tag = try #require(first.header("ETag"))
        let again = try request("GET", "/albums/\(id)", headers: ["If-None-Match": tag])
        #expect(again.status == 304)
        #expect(again.body.isEmpty)
        #expect(again.header("ETag") == tag)
        let list = try request("GET", "/albums")
        let listTag = try #require(list.header("ETag"))
        #expect(try request("GET", "/albums", headers: ["If-None-Match": listTag]).status == 304)
        // A change makes the old tags stale
        _ = try request("PATCH", "/albums/\(id)", json: #"{"genre": "Rock"}"#)
        #expect(try request("GET", "/albums", headers: ["If-None-Match": listTag]).status == 200)
        #expect(try request("GET", "/albums/\(id)", headers: ["If-None-Match": tag]).status == 200)
    }

    @Test func ifMatchGuardsUpdatesAndDeletes() throws {
        let id = try firstID()
        let tag = try #require(try request("GET", "/albums/\(id)").header("ETag"))
        let stale = try request("PATCH", "/albums/\(id)", headers: ["If-Match": "\"0000000000000000.0\""], json: #"{"title": "Changed"}"#)
        #expect(stale.status == 412)
        #expect(stale.header("Content-Type") == "application/problem+json")
        #expect(try request("GET", "/albums/\(id)").json()["title"] as? String == "Best of Bowie")
        let fresh = try request("PATCH", "/albums/\(id)", headers: ["If-Match": tag], json: #"{"title": "Changed"}"#)
        #expect(fresh.status == 200)
        #expect(try fresh.json()["title"] as? String == "Changed")
        #expect(try request("DELETE", "/albums/\(id)", headers: ["If-Match": tag]).status == 412, "the old tag no longer matches")
    }

    @Test func tableRepresentationOfBestOfBowie() throws {
        let id = try firstID()
        let table = try request("GET", "/albums/\(id)/table")
        #expect(table.status == 200)
        #expect(table.text == #"{"titles":["Artist","Album","Genre","Year"],"values":["David Bowie","Best of Bowie","Pop","1992"]}"# + "\n")
    }

    @Test func moveReordersAndUndoRestores() throws {
        let id = try firstID()
        let moved = try request("POST", "/albums/\(id)/move", json: #"{"index": 3}"#)
        #expect(moved.status == 200)
        #expect(try moved.json()["index"] as? Int == 3)
        #expect(try allTitles()[3] == "Best of Bowie")
        #expect(try request("POST", "/albums/\(id)/move", json: #"{"index": 99}"#).status == 422)
        #expect(try request("POST", "/undo").status == 200)
        #expect(try allTitles()[0] == "Best of Bowie")
    }

    @Test func badInputIsRefusedAndChangesNothing() throws {
        let before = try allTitles()
        let version = try request("GET", "/albums").json()["version"] as? Int

        let badJSON = try request("POST", "/albums", json: #"{"title": "x", "#)
        #expect(badJSON.status == 400)
        #expect(badJSON.header("Content-Type") == "application/problem+json")

        let wrongType = try request("POST", "/albums", headers: ["Content-Type": "application/x-www-form-urlencoded"], json: "title=x")
        #expect(wrongType.status == 415)
        #expect(wrongType.text.contains("--json"))

        let invalid = try request("POST", "/albums", json: #"{"title": "", "artist": "A", "year": 92, "coverUrl": "ftp://x", "titel": "y"}"#)
        #expect(invalid.status == 422)
        let problem = try invalid.json()
        let fields = Set((problem["errors"] as? [[String: Any]] ?? []).compactMap { $0["field"] as? String })
        #expect(fields.isSuperset(of: ["title", "year", "coverUrl", "titel"]))

        #expect(try request("GET", "/albums/01HZY8Q6V9T3X2K7M4N5P6R7S8").status == 404)
        #expect(try request("GET", "/albums/not-an-id").status == 404)
        let outOfRange = try request("DELETE", "/albums/at/7")
        #expect(outOfRange.status == 404)
        #expect((try outOfRange.json()["detail"] as? String)?.contains("0 to 4") == true)
        #expect(try request("GET", "/albums/at/-1").status == 400)
        #expect(try request("GET", "/albums/at/two").status == 400)
        #expect(try request("GET", "/albums?limit=0").status == 400)
        #expect(try request("GET", "/albums?limit=501").status == 400)
        #expect(try request("POST", "/api/deleteAlbum", headers: ["Content-Type": "text/plain"], json: "abc").status == 400)
        #expect(try request("PUT", "/state", json: #"{"currentAlbumIndex": 9}"#).status == 422)

        #expect(try allTitles() == before)
        #expect(try request("GET", "/albums").json()["version"] as? Int == version)
    }

    @Test func idempotencyKeyReplaysTheFirstResponse() throws {
        let body = #"{"title": "Heroes", "artist": "David Bowie"}"#
        let first = try request("POST", "/albums", headers: ["Idempotency-Key": "k-1"], json: body)
        #expect(first.status == 201)
        let retry = try request("POST", "/albums", headers: ["Idempotency-Key": "k-1"], json: body)
        #expect(retry.status == 201)
        #expect(retry.body == first.body)
        #expect(retry.header("Location") == first.header("Location"))
        #expect(retry.header("Idempotent-Replayed") == "true")
        #expect(try allTitles().filter { $0 == "Heroes" }.count == 1)
        let different = try request("POST", "/albums", headers: ["Idempotency-Key": "k-1"], json: #"{"title": "Lodger", "artist": "David Bowie"}"#)
        #expect(different.status == 422)
        // A failed request does not burn its key
        #expect(try request("POST", "/albums", headers: ["Idempotency-Key": "k-2"], json: #"{"title": ""}"#).status == 422)
        #expect(try request("POST", "/albums", headers: ["Idempotency-Key": "k-2"], json: #"{"title": "Lodger", "artist": "David Bowie"}"#).status == 201)
    }

    /// Over the socket: the export streams its body and the import streams its upload, which
    /// only a connection carries.
    @Test func archiveRoundTripsAndInvalidImportsChangeNothing() throws {
        app.start()
        let socket = Endpoint.port(app.port)
        func request(_ method: String, _ path: String, json: String? = nil) throws -> RawHTTPClient.Response {
            try socket.request(method: method, path: path, headers: json == nil ? [:] : ["Content-Type": "application/json"],
                               body: Array((json ?? "").utf8))
        }
        let export = try request("GET", "/archive")
        #expect(export.status == 200)
        #expect(export.header("Transfer-Encoding") == "chunked")
        let document = try export.json()
        #expect(document["format"] as? String == "bluelibrary.archive")
        #expect((document["albums"] as? [Any])?.count == 5)

        // Change the library, then import the export: back to the five
        _ = try request("DELETE", "/albums/at/0")
        let imported = try request("PUT", "/archive", json: export.text)
        #expect(imported.status == 200)
        #expect(try imported.json()["albumCount"] as? Int == 5)
        #expect(try allTitles() == AlbumSessionTests.seedTitles)

        // An archive with one bad album changes nothing and says where
        var broken = document
        var albums = try #require(broken["albums"] as? [[String: Any]])
        albums[3]["year"] = "nineteen"
        broken["albums"] = albums
        let bad = try request("PUT", "/archive", json: String(decoding: try JSONSerialization.data(withJSONObject: broken), as: UTF8.self))
        #expect(bad.status == 422)
        #expect(bad.text.contains("albums[3].year"))
        #expect(try allTitles() == AlbumSessionTests.seedTitles)
    }
}
