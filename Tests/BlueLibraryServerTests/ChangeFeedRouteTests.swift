#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import Library
import TestThreads
import Testing

@testable import BlueLibraryServer

/// `GET /changes`: its routes answered in process, and the feed after a kill -9 of a real
/// server process.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) final class ChangeFeedRouteTests {
    static func request(_ endpoint: Endpoint, _ method: String, _ path: String, json: String? = nil) throws -> RawHTTPClient.Response {
        let headers = json == nil ? [:] : ["Content-Type": "application/json"]
        return try endpoint.request(method: method, path: path, headers: headers, body: Array((json ?? "").utf8))
    }

    static func add(_ port: Endpoint, _ title: String, at index: Int? = nil) throws -> String {
        let query = index.map { "?index=\($0)" } ?? ""
        let response = try request(port, "POST", "/albums\(query)", json: #"{"title": "\#(title)", "artist": "Tester"}"#)
        #expect(response.status == 201)
        return try #require(try response.json()["id"] as? String)
    }

    /// Follows `next` until `more` is false; returns every change and the final `next`.
    static func allChanges(_ port: Endpoint, since: Int64 = 0, limit: Int = 1000) throws -> ([[String: Any]], Int64) {
        var since = since
        var changes: [[String: Any]] = []
        while true {
            let response = try request(port, "GET", "/changes?since=\(since)&limit=\(limit)")
            #expect(response.status == 200, "\(response.text)")
            let page = try response.json()
            changes += page["changes"] as? [[String: Any]] ?? []
            since = Int64(try #require(page["next"] as? Int))
            if page["more"] as? Bool != true { return (changes, since) }
        }
    }

    /// Replays a feed that starts at the seeding on the seeded ids; the result must be the
    /// library's order.
    static func replay(_ changes: [[String: Any]], seeded: [String]) throws -> [String] {
        var ids: [String] = []
        for change in changes {
            let kind = try #require(change["kind"] as? String)
            if kind == "replaced" {
                ids = seeded
                continue
            }
            let id = try #require(change["id"] as? String)
            let index = try #require(change["index"] as? Int)
            switch kind {
            case "added": ids.insert(id, at: index)
            case "deleted":
                #expect(ids[index] == id)
                ids.remove(at: index)
            case "moved":
                ids.removeAll { $0 == id }
                ids.insert(id, at: index)
            default: #expect(ids[index] == id)
            }
        }
        return ids
    }

    static func ids(_ port: Endpoint) throws -> [String] {
        let items = try request(port, "GET", "/albums?limit=500").json()["items"] as? [[String: Any]] ?? []
        return items.compactMap { ($0["album"] as? [String: Any])?["id"] as? String ?? $0["id"] as? String }
    }

    @Test func pagesIncludeTombstonesAndAgreeWithTheData() throws {
        let app = try InMemoryApp.app()
        defer { app.shutdown() }
        let endpoint = Endpoint.inProcess(InProcessClient(app))
        let seeded = try Self.ids(endpoint)
        #expect(seeded.count == 5)
        let first = try Self.request(endpoint, "GET", "/changes?since=0")
        #expect(first.status == 200)
        #expect(first.header("Cache-Control") == "no-cache")
        #expect(first.text == #"{"changes":[{"id":null,"index":null,"kind":"replaced","version":1}],"more":false,"next":1}"# + "\n")

        let a = try Self.add(endpoint, "A", at: 2)
        let b = try Self.add(endpoint, "B")
        #expect(try Self.request(endpoint, "POST", "/albums/\(b)/move", json: #"{"index": 0}"#).status == 200)
        #expect(try Self.request(endpoint, "PATCH", "/albums/\(a)", json: #"{"year": 2001}"#).status == 200)
        #expect(try Self.request(endpoint, "DELETE", "/albums/\(a)").status == 200)
        #expect(try Self.request(endpoint, "PUT", "/state", json: #"{"currentAlbumIndex": 1}"#).status == 200)

        let page = try Self.request(endpoint, "GET", "/changes?since=1&limit=2").json()
        let changes = page["changes"] as? [[String: Any]] ?? []
        #expect(changes.map { $0["kind"] as? String } == ["added", "added"])
        #expect(changes.map { $0["version"] as? Int } == [2, 3])
        #expect(page["next"] as? Int == 3 && page["more"] as? Bool == true)
        let (rest, next) = try Self.allChanges(endpoint, since: 3, limit: 2)
        #expect(rest.map { $0["kind"] as? String } == ["moved", "updated", "deleted"])
        #expect(next == 6)
        // The tombstone names the deleted album and the index it had.
        #expect(rest[2]["id"] as? String == a && rest[2]["index"] as? Int == 3)

        let (all, _) = try Self.allChanges(endpoint)
        #expect(try Self.replay(all, seeded: seeded) == (try Self.ids(endpoint)))
        // Up to date: an empty page that keeps `next`.
        #expect(try Self.request(endpoint, "GET", "/changes?since=6").text == #"{"changes":[],"more":false,"next":6}"# + "\n")
    }

    @Test func badQueriesAre400() throws {
        let app = try InMemoryApp.app()
        defer { app.shutdown() }
        let endpoint = Endpoint.inProcess(InProcessClient(app))
        for path in ["/changes", "/changes?since=", "/changes?since=-1", "/changes?since=x", "/changes?since=0&limit=0",
                     "/changes?since=0&limit=1001", "/changes?since=0&limit=ten"] {
            let response = try Self.request(endpoint, "GET", path)
            #expect(response.status == 400, "\(path): \(response.status)")
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        #expect(try Self.request(endpoint, "GET", "/changes?since=0&limit=1000").status == 200)
    }

    @Test func sinceOlderThanWhatIsKeptIs410Gone() throws {
        let app = try TestApp.make {
            $0.changeRetention = ChangeRetention(age: .zero, count: 3, prunePerWrite: 16)
        }
        defer { app.shutdown() }  // never started: nothing listens
        let endpoint = Endpoint.inProcess(InProcessClient(app))
        for index in 0..<6 { _ = try Self.add(endpoint, "A\(index)") } // versions 2...7
        let gone = try Self.request(endpoint, "GET", "/changes?since=0")
        #expect(gone.status == 410)
        #expect(gone.header("Content-Type") == "application/problem+json")
        let problem = try gone.json()
        #expect(problem["type"] as? String == "urn:bluelibrary:problem:changes-expired")
        #expect((problem["detail"] as? String)?.contains("reload everything") == true)
        // The last `count` are always kept.
        let kept = try Self.request(endpoint, "GET", "/changes?since=4")
        #expect(kept.status == 200)
        #expect((try kept.json()["changes"] as? [Any])?.count == 3)
        // A version this library never had (another database): the client's mistake, 400
        // naming the current version (nothing to reload).
        let ahead = try Self.request(endpoint, "GET", "/changes?since=99")
        #expect(ahead.status == 400)
        let aheadProblem = try ahead.json()
        #expect((aheadProblem["detail"] as? String)?.contains("current version 7") == true)
        #expect(aheadProblem["type"] as? String == "urn:bluelibrary:problem:invalid-query-parameter")
        #expect((aheadProblem["errors"] as? [[String: Any]])?.first?["field"] as? String == "since")
    }

    /// The feed is written in the mutation's transaction: after kill -9 it still replays to
    /// exactly the stored data.
    @Test func agreesWithTheDataAfterKill9() throws {
        let directory = TestApp.temporaryDirectory()
        var seeded: [String] = []
        do {
            let server = try ServerProcess(arguments: ["--access-log", "off"], dataDirectory: directory)
            seeded = try Self.ids(.port(server.port))
            var ids: [String] = []
            for index in 0..<30 {
                ids.append(try Self.add(.port(server.port), "K\(index)", at: index % 4))
                if index % 3 == 2 {
                    #expect(try Self.request(.port(server.port), "DELETE", "/albums/\(ids.removeFirst())").status == 200)
                }
                if index % 5 == 4 {
                    #expect(try Self.request(.port(server.port), "POST", "/albums/\(ids[0])/move", json: #"{"index": 0}"#).status == 200)
                }
            }
            server.signal(SIGKILL)
            _ = server.waitForExit(timeout: 10)
        }
        let restarted = try ServerProcess(arguments: ["--access-log", "off"], dataDirectory: directory)
        let (changes, next) = try Self.allChanges(.port(restarted.port), limit: 7)
        // One change per version, none lost or extra ...
        #expect(next >= 41)
        #expect(changes.compactMap { $0["version"] as? Int } == Array(1...Int(next)))
        #expect(try Self.replay(changes, seeded: seeded) == (try Self.ids(.port(restarted.port))))
        // ... and `next` was the library's version: the next write gets the next one.
        _ = try Self.add(.port(restarted.port), "after")
        let after = try Self.request(.port(restarted.port), "GET", "/changes?since=\(next)").json()["changes"] as? [[String: Any]]
        #expect(after?.map { $0["version"] as? Int } == [Int(next) + 1])
        restarted.signal(SIGTERM)
        _ = restarted.waitForExit(timeout: 10)
    }
}
