import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Several libraries: the catalog routes, every album route under `/libraries/{lib}/`, moves
/// between libraries and their undo, problem documents. Answered in process by the app on the
/// in-memory store, but for exports and imports, which stream over a socket with SQLite.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) final class LibraryRouteTests {
    static func request(_ endpoint: Endpoint, _ method: String, _ path: String, json: String? = nil,
                        headers extra: [String: String] = [:]) throws -> RawHTTPClient.Response {
        var headers = json == nil ? [:] : ["Content-Type": "application/json"]
        headers.merge(extra) { $1 }
        return try endpoint.request(method: method, path: path, headers: headers, body: Array((json ?? "").utf8))
    }

    static func add(_ endpoint: Endpoint, _ title: String, in prefix: String = "") throws -> String {
        let response = try request(endpoint, "POST", "\(prefix)/albums", json: #"{"title": "\#(title)", "artist": "Tester"}"#)
        #expect(response.status == 201, "\(response.text)")
        return try #require(try response.json()["id"] as? String)
    }

    static func ids(_ endpoint: Endpoint, in prefix: String = "") throws -> [String] {
        let response = try request(endpoint, "GET", "\(prefix)/albums?limit=500")
        #expect(response.status == 200, "\(response.text)")
        return (try response.json()["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    }

    static func createLibrary(_ endpoint: Endpoint, _ id: String, name: String? = nil) throws {
        let body = name.map { #"{"id": "\#(id)", "name": "\#($0)"}"# } ?? #"{"id": "\#(id)"}"#
        let response = try request(endpoint, "POST", "/libraries", json: body)
        #expect(response.status == 201, "\(response.text)")
    }

    /// A problem document with `status` and, when given, the problem type's code.
    // The same over a socket to `port` (the event, move-concurrency and group-commit suites).
    static func request(_ port: Int, _ method: String, _ path: String, json: String? = nil,
                        headers extra: [String: String] = [:]) throws -> RawHTTPClient.Response {
        try request(.port(port), method, path, json: json, headers: extra)
    }
    static func add(_ port: Int, _ title: String, in prefix: String = "") throws -> String { try add(.port(port), title, in: prefix) }
    static func ids(_ port: Int, in prefix: String = "") throws -> [String] { try ids(.port(port), in: prefix) }
    static func createLibrary(_ port: Int, _ id: String, name: String? = nil) throws { try createLibrary(.port(port), id, name: name) }

    static func expectProblem(_ response: RawHTTPClient.Response, _ status: Int, _ code: String? = nil,
                              field: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
        #expect(response.header("Content-Type") == "application/problem+json", sourceLocation: sourceLocation)
        let problem = try response.json()
        #expect(problem["status"] as? Int == status, sourceLocation: sourceLocation)
        #expect((problem["detail"] as? String)?.isEmpty == false, sourceLocation: sourceLocation)
        if let code {
            #expect(problem["type"] as? String == "urn:bluelibrary:problem:\(code)", "\(problem)", sourceLocation: sourceLocation)
        }
        if let field {
            let fields = (problem["errors"] as? [[String: Any]] ?? []).compactMap { $0["field"] as? String }
            #expect(fields.contains(field), "\(problem)", sourceLocation: sourceLocation)
        }
    }

    @Test func catalogCreateReadRenameDeleteWithItsRefusals() throws {
        let app = try InMemoryApp.app()
        defer { app.shutdown() }
        let endpoint = Endpoint.inProcess(InProcessClient(app))

        let initial = try Self.request(endpoint, "GET", "/libraries").json()
        let listed = try #require(initial["libraries"] as? [[String: Any]])
        #expect(listed.map { $0["id"] as? String } == ["default"])
        #expect(listed[0]["albumCount"] as? Int == 5 && listed[0]["name"] as? String == "default")

        let created = try Self.request(endpoint, "POST", "/libraries", json: #"{"id": "jazz", "name": " Jazz "}"#)
        #expect(created.status == 201)
        #expect(created.header("Location")?.hasSuffix("/libraries/jazz") == true)
        let record = try created.json()
        #expect(record["id"] as? String == "jazz" && record["name"] as? String == "Jazz")
        #expect(record["albumCount"] as? Int == 0 && record["version"] as? Int == 0)
        try Self.createLibrary(endpoint, "rock")
        #expect(try Self.request(endpoint, "GET", "/libraries/rock").json()["name"] as? String == "rock")

        try Self.expectProblem(try Self.request(endpoint, "POST", "/libraries", json: #"{"id": "jazz"}"#), 409, "conflict")
        let badID = try Self.request(endpoint, "POST", "/libraries", json: #"{"id": "Jazz!"}"#)
        try Self.expectProblem(badID, 422, "invalid", field: "id")
        #expect(try badID.json()["title"] as? String == "Invalid library")
        try Self.expectProblem(try Self.request(endpoint, "POST", "/libraries", json: #"{"name": "x"}"#), 422, "invalid", field: "id")
        try Self.expectProblem(try Self.request(endpoint, "POST", "/libraries", json: #"{"id": "ok", "nmae": "x"}"#), 422, "invalid", field: "nmae")
        try Self.expectProblem(try Self.request(endpoint, "POST", "/libraries", json: #"{"id": "#), 400, "malformed")

        let ids = try #require(try Self.request(endpoint, "GET", "/libraries").json()["libraries"] as? [[String: Any]]).map { $0["id"] as? String }
        #expect(ids == ["default", "jazz", "rock"])

        let renamed = try Self.request(endpoint, "PATCH", "/libraries/jazz", json: #"{"name": "Jazz & Blues"}"#)
        #expect(renamed.status == 200)
        #expect(try renamed.json()["name"] as? String == "Jazz & Blues")
        try Self.expectProblem(try Self.request(endpoint, "PATCH", "/libraries/jazz", json: #"{"name": "  "}"#), 422, "invalid", field: "name")
        try Self.expectProblem(try Self.request(endpoint, "PATCH", "/libraries/nope", json: #"{"name": "x"}"#), 404, "library-not-found")

        try Self.expectProblem(try Self.request(endpoint, "GET", "/libraries/nope"), 404, "library-not-found")
        try Self.expectProblem(try Self.request(endpoint, "GET", "/libraries/NOT_AN_ID/albums"), 404, "library-not-found")
        try Self.expectProblem(try Self.request(endpoint, "GET", "/libraries/nope/albums"), 404, "library-not-found")
        try Self.expectProblem(try Self.request(endpoint, "POST", "/libraries/nope/albums", json: #"{"title": "x"}"#), 404, "library-not-found")

        // default is never deleted; a library with albums needs force.
        try Self.expectProblem(try Self.request(endpoint, "DELETE", "/libraries/default?force=true"), 409, "conflict")
        _ = try Self.add(endpoint, "Kind of Blue", in: "/libraries/jazz")
        #expect(try Self.request(endpoint, "GET", "/libraries/jazz").json()["albumCount"] as? Int == 1)
        try Self.expectProblem(try Self.request(endpoint, "DELETE", "/libraries/jazz"), 409, "conflict")
        try Self.expectProblem(try Self.request(endpoint, "DELETE", "/libraries/jazz?force=maybe"), 400)
        #expect(try Self.request(endpoint, "DELETE", "/libraries/jazz?force=true").status == 204)
        #expect(try Self.request(endpoint, "DELETE", "/libraries/rock").status == 204)
        try Self.expectProblem(try Self.request(endpoint, "GET", "/libraries/jazz"), 404, "library-not-found")
        try Self.expectProblem(try Self.request(endpoint, "GET", "/libraries/jazz/albums"), 404, "library-not-found")
        try Self.expectProblem(try Self.request(endpoint, "DELETE", "/libraries/jazz"), 404, "library-not-found")

        // The id can be used again: empty, with versions continuing past the old ones, so
        // nothing cached or tagged for the old library answers for the new one.
        try Self.createLibrary(endpoint, "old")
        _ = try Self.add(endpoint, "Gone", in: "/libraries/old")
        let oldPage = try Self.request(endpoint, "GET", "/libraries/old/albums")
        let oldTag = try #require(oldPage.header("ETag"))
        #expect(try Self.request(endpoint, "DELETE", "/libraries/old?force=true").status == 204)
        try Self.createLibrary(endpoint, "old")
        let newPage = try Self.request(endpoint, "GET", "/libraries/old/albums", headers: ["If-None-Match": oldTag])
        #expect(newPage.status == 200)
        #expect(try newPage.json()["items"] as? [Any] != nil && (try newPage.json()["items"] as? [Any])?.isEmpty == true)
        #expect(newPage.header("ETag") != oldTag)
        try Self.createLibrary(endpoint, "jazz")
        let again = try Self.request(endpoint, "GET", "/libraries/jazz").json()
        #expect(again["albumCount"] as? Int == 0)
        #expect((again["version"] as? Int ?? 0) >= 1)
        #expect(try Self.ids(endpoint, in: "/libraries/jazz") == [])
    }

    @Test func prefixedDefaultRoutesAnswerAsTheBareOnes() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let endpoint = Endpoint.port(app.port)  // exports and imports stream: over the socket
        let prefix = "/libraries/default"
        let id = try #require(try Self.ids(endpoint).first)

        for path in ["/albums?limit=2", "/albums?sort=title&count=true", "/albums/\(id)", "/albums/\(id)/table", "/albums/at/3",
                     "/undo", "/state?client=phone", "/changes?since=0"] {
            let bare = try Self.request(endpoint, "GET", path)
            let prefixed = try Self.request(endpoint, "GET", prefix + path)
            #expect(bare.status == 200 && prefixed.status == 200, "\(path): \(bare.status) \(prefixed.status)")
            #expect(bare.body == prefixed.body, "\(path)")
            #expect(bare.header("ETag") == prefixed.header("ETag"), "\(path)")
        }
        // The archive differs only in when it was exported.
        var bareArchive = try Self.request(endpoint, "GET", "/archive").json()
        var prefixedArchive = try Self.request(endpoint, "GET", "\(prefix)/archive").json()
        #expect(bareArchive.removeValue(forKey: "exportedAt") != nil && prefixedArchive.removeValue(forKey: "exportedAt") != nil)
        #expect(NSDictionary(dictionary: bareArchive).isEqual(to: prefixedArchive))
        #expect(prefixedArchive["library"] as? String == "default")
        // One list, one request model: the bare ETag revalidates the prefixed route.
        let etag = try #require(try Self.request(endpoint, "GET", "/albums?limit=2").header("ETag"))
        #expect(try Self.request(endpoint, "GET", "\(prefix)/albums?limit=2", headers: ["If-None-Match": etag]).status == 304)
        // The next link keeps the form the client used.
        let link = try #require(try Self.request(endpoint, "GET", "\(prefix)/albums?limit=2").header("Link"))
        #expect(link.contains("\(prefix)/albums?limit=2&cursor="), "\(link)")
        #expect(try Self.request(endpoint, "GET", "/albums?limit=2").header("Link")?.contains("/libraries/") == false)

        // Writes through the prefix change the one library.
        let created = try Self.request(endpoint, "POST", "\(prefix)/albums?index=0", json: #"{"title": "Via the prefix", "artist": "Tester"}"#)
        #expect(created.status == 201)
        #expect(created.header("Location")?.contains("\(prefix)/albums/") == true)
        let newID = try #require(try created.json()["id"] as? String)
        #expect(try Self.ids(endpoint).first == newID)
        #expect(try Self.request(endpoint, "POST", "\(prefix)/undo").status == 200)
        #expect(!(try Self.ids(endpoint).contains(newID)))
    }

    @Test func librariesAreSeparateListsWithTheirOwnVersionsCachesAndUndo() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let endpoint = Endpoint.port(app.port)  // exports and imports stream: over the socket
        try Self.createLibrary(endpoint, "jazz")
        let jazz = "/libraries/jazz"
        let defaultIDs = try Self.ids(endpoint)

        let first = try Self.add(endpoint, "Kind of Blue", in: jazz)
        let second = try Self.add(endpoint, "A Love Supreme", in: jazz)
        #expect(try Self.ids(endpoint, in: jazz) == [first, second])
        #expect(try Self.ids(endpoint) == defaultIDs)

        // Covers too: the album has none (404 no-cover), an album of another library is not found.
        try Self.expectProblem(try Self.request(endpoint, "GET", "\(jazz)/albums/\(first)/cover"), 404, "no-cover")
        try Self.expectProblem(try Self.request(endpoint, "GET", "\(jazz)/albums/\(defaultIDs[0])/cover"), 404, "not-found")

        // Albums are found only in their own library.
        #expect(try Self.request(endpoint, "GET", "\(jazz)/albums/\(first)").status == 200)
        try Self.expectProblem(try Self.request(endpoint, "GET", "/albums/\(first)"), 404, "not-found")
        try Self.expectProblem(try Self.request(endpoint, "GET", "\(jazz)/albums/\(defaultIDs[0])"), 404, "not-found")
        #expect(try Self.request(endpoint, "GET", "\(jazz)/albums/at/1").json()["id"] as? String == second)

        // Versions, ETags and 304s per library; a change elsewhere does not outdate the page.
        let page = try Self.request(endpoint, "GET", "\(jazz)/albums")
        #expect(try page.json()["version"] as? Int == 2)
        let etag = try #require(page.header("ETag"))
        #expect(etag != (try Self.request(endpoint, "GET", "/albums").header("ETag")))
        #expect(try Self.request(endpoint, "GET", "\(jazz)/albums", headers: ["If-None-Match": etag]).status == 304)
        _ = try Self.add(endpoint, "Elsewhere")
        #expect(try Self.request(endpoint, "GET", "\(jazz)/albums", headers: ["If-None-Match": etag]).status == 304)
        let albumTag = try #require(try Self.request(endpoint, "GET", "\(jazz)/albums/\(first)").header("ETag"))
        #expect(try Self.request(endpoint, "GET", "\(jazz)/albums/\(first)", headers: ["If-None-Match": albumTag]).status == 304)
        #expect(try Self.request(endpoint, "PATCH", "\(jazz)/albums/\(first)", json: #"{"year": 1959}"#).status == 200)
        #expect(try Self.request(endpoint, "GET", "\(jazz)/albums", headers: ["If-None-Match": etag]).status == 200)
        #expect(try Self.request(endpoint, "GET", "\(jazz)/albums/\(first)").json()["year"] as? Int == 1959)

        // Each library has its own undo stack, state and change feed.
        let undone = try Self.request(endpoint, "POST", "\(jazz)/undo")
        #expect(undone.status == 200, "\(undone.text)")
        #expect(try Self.request(endpoint, "GET", "\(jazz)/albums/\(first)").json()["year"] as? Int == nil)
        #expect(try Self.request(endpoint, "PUT", "\(jazz)/state?client=phone", json: #"{"currentAlbumIndex": 1}"#).status == 200)
        #expect(try Self.request(endpoint, "GET", "\(jazz)/state?client=phone").json()["currentAlbumIndex"] as? Int == 1)
        #expect(try Self.request(endpoint, "GET", "/state?client=phone").json()["currentAlbumIndex"] as? Int != 1)
        let changes = try #require(try Self.request(endpoint, "GET", "\(jazz)/changes?since=0").json()["changes"] as? [[String: Any]])
        #expect(changes.map { $0["kind"] as? String } == ["added", "added", "updated", "updated"])
        #expect(try Self.request(endpoint, "POST", "\(jazz)/albums/\(second)/move", json: #"{"index": 0}"#).status == 200)
        let moved = try #require(try Self.request(endpoint, "GET", "\(jazz)/changes?since=4").json()["changes"] as? [[String: Any]])
        #expect(moved.first?["kind"] as? String == "moved" && moved.first?["from"] as? Int == 1 && moved.first?["index"] as? Int == 0)
        #expect(try Self.request(endpoint, "DELETE", "\(jazz)/albums/at/0").json()["id"] as? String == second)
        #expect(try Self.ids(endpoint, in: jazz) == [first])
        #expect(try Self.request(endpoint, "PUT", "\(jazz)/state?client=phone", json: #"{"currentAlbumIndex": 0}"#).status == 200)

        // The archive of a library says which one it is, and imports go into the route's library.
        let archive = try Self.request(endpoint, "GET", "\(jazz)/archive")
        #expect(archive.status == 200)
        #expect(try archive.json()["library"] as? String == "jazz")
        try Self.createLibrary(endpoint, "copy")
        // Album ids are unique across libraries: the same archive cannot go into another one.
        try Self.expectProblem(try Self.request(endpoint, "PUT", "/libraries/copy/archive", json: archive.text), 409, "conflict")
        #expect(try Self.ids(endpoint, in: "/libraries/copy") == [])
        // Once the ids are free again, the archive of jazz imports into copy.
        #expect(try Self.request(endpoint, "DELETE", "\(jazz)?force=true").status == 204)
        let imported = try Self.request(endpoint, "PUT", "/libraries/copy/archive", json: archive.text)
        #expect(imported.status == 200, "\(imported.text)")
        #expect(try Self.ids(endpoint, in: "/libraries/copy") == [first])
        #expect(try Self.request(endpoint, "GET", "/libraries/copy/state?client=phone").json()["currentAlbumIndex"] as? Int == 0)
    }

    @Test func moveBetweenLibrariesAndUndoFromTheSource() throws {
        let app = try InMemoryApp.app()
        defer { app.shutdown() }
        let endpoint = Endpoint.inProcess(InProcessClient(app))
        try Self.createLibrary(endpoint, "jazz")
        let existing = try Self.add(endpoint, "Kind of Blue", in: "/libraries/jazz")
        let before = try Self.ids(endpoint)
        let id = before[2]

        let moved = try Self.request(endpoint, "POST", "/albums/\(id)/move", json: #"{"library": "jazz", "index": 0}"#)
        #expect(moved.status == 200, "\(moved.text)")
        let body = try moved.json()
        #expect(body["id"] as? String == id && body["library"] as? String == "jazz" && body["index"] as? Int == 0)
        #expect(try Self.ids(endpoint) == before.filter { $0 != id })
        #expect(try Self.ids(endpoint, in: "/libraries/jazz") == [id, existing])
        try Self.expectProblem(try Self.request(endpoint, "GET", "/albums/\(id)"), 404, "not-found")
        #expect(try Self.request(endpoint, "GET", "/libraries/jazz/albums/\(id)").status == 200)

        // Both change feeds say where it went.
        let source = try #require(try Self.request(endpoint, "GET", "/changes?since=1").json()["changes"] as? [[String: Any]])
        #expect(source.count == 1)
        #expect(source[0]["kind"] as? String == "deleted" && source[0]["id"] as? String == id)
        #expect(source[0]["index"] as? Int == 2 && source[0]["movedTo"] as? String == "jazz" && source[0]["movedFrom"] == nil)
        let target = try #require(try Self.request(endpoint, "GET", "/libraries/jazz/changes?since=1").json()["changes"] as? [[String: Any]])
        #expect(target.count == 1)
        #expect(target[0]["kind"] as? String == "added" && target[0]["index"] as? Int == 0 && target[0]["movedFrom"] as? String == "default")

        // Without an index: appended. Naming the route's own library: a move within it.
        let back = try Self.request(endpoint, "POST", "/libraries/jazz/albums/\(existing)/move", json: #"{"library": "default"}"#)
        #expect(back.status == 200)
        #expect(try back.json()["index"] as? Int == before.count - 1)
        #expect(try Self.request(endpoint, "POST", "/libraries/default/albums/\(existing)/move", json: #"{"library": "default", "index": 0}"#)
            .json()["index"] as? Int == 0)
        #expect(try Self.request(endpoint, "POST", "/undo").status == 200)  // the move within default
        #expect(try Self.request(endpoint, "POST", "/libraries/jazz/undo").status == 200)  // Kind of Blue goes back to jazz
        #expect(try Self.ids(endpoint, in: "/libraries/jazz") == [id, existing])

        // The first move is undone from the source library's stack.
        let undone = try Self.request(endpoint, "POST", "/undo")
        #expect(undone.status == 200, "\(undone.text)")
        #expect(try Self.ids(endpoint) == before)
        #expect(try Self.ids(endpoint, in: "/libraries/jazz") == [existing])

        // Refusals, each a problem document naming the field.
        try Self.expectProblem(try Self.request(endpoint, "POST", "/albums/\(id)/move", json: #"{"library": "nope"}"#), 422, field: "library")
        try Self.expectProblem(try Self.request(endpoint, "POST", "/albums/\(id)/move", json: #"{"library": "No!"}"#), 422, "invalid", field: "library")
        try Self.expectProblem(try Self.request(endpoint, "POST", "/albums/\(id)/move", json: #"{"library": "jazz", "index": -1}"#), 400)
        try Self.expectProblem(try Self.request(endpoint, "POST", "/albums/\(id)/move", json: #"{}"#), 422, field: "index")
        try Self.expectProblem(try Self.request(endpoint, "POST", "/libraries/jazz/albums/\(id)/move", json: #"{"library": "default"}"#),
                               404, "not-found")
        #expect(try Self.ids(endpoint) == before)
    }
}
