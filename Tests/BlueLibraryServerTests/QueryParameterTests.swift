import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Query parameters are read in one place (`QueryParameters`): every bad value, on every route,
/// is the same 400 that names the parameter; and the contract's other promises about what a
/// request may carry (`since` ahead of the library, an empty `Last-Event-ID`, `X-Request-Id`).
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class QueryParameterTests {
    let app: BlueLibraryApp
    var port: Int { app.port }

    init() throws {
        app = try TestApp.make { $0.seed = false }
        app.start()
        for n in 0..<3 {
            let body = #"{"title": "Album \#(n)", "artist": "Artist", "year": \#(1990 + n)}"#
            _ = try RawHTTPClient.request(port: port, method: "POST", path: "/albums", headers: ["Content-Type": "application/json"], body: Array(body.utf8))
        }
        _ = try RawHTTPClient.request(port: port, method: "POST", path: "/views", headers: ["Content-Type": "application/json"],
                                      body: Array(#"{"id": "all", "sources": ["default"]}"#.utf8))
    }

    deinit { app.shutdown() }

    func send(_ method: String, _ path: String, json: String? = nil) throws -> RawHTTPClient.Response {
        try RawHTTPClient.request(port: port, method: method, path: path, headers: json == nil ? [:] : ["Content-Type": "application/json"],
                                  body: Array((json ?? "").utf8))
    }

    /// Each bad parameter on each route that reads it: 400, the one problem type and title, and
    /// a detail and `errors[0].field` that name the parameter.
    @Test func everyBadParameterIsTheSame400NamingIt() throws {
        let cases: [(method: String, path: String, parameter: String, json: String?)] = [
            ("GET", "/albums?count=maybe", "count", nil),
            ("GET", "/albums?count=1", "count", nil),
            ("GET", "/albums?sort=nope", "sort", nil),
            ("GET", "/albums?sort=-colour", "sort", nil),
            ("GET", "/albums?limit=abc", "limit", nil),
            ("GET", "/albums?limit=0", "limit", nil),
            ("GET", "/albums?limit=501", "limit", nil),
            ("GET", "/albums?offset=-1", "offset", nil),
            ("GET", "/albums?offset=x", "offset", nil),
            ("GET", "/albums?yearFrom=0", "yearFrom", nil),
            ("GET", "/albums?yearTo=99999", "yearTo", nil),
            ("GET", "/albums?yearFrom=1e3", "yearFrom", nil),
            ("GET", "/libraries/default/albums?sort=up", "sort", nil),
            ("GET", "/views/all/albums?count=yes", "count", nil),
            ("GET", "/views/all/albums?limit=-2", "limit", nil),
            ("GET", "/views/all/albums?sort=nope", "sort", nil),
            ("GET", "/changes", "since", nil),
            ("GET", "/changes?since=-1", "since", nil),
            ("GET", "/changes?since=0&limit=1001", "limit", nil),
            ("GET", "/state?client=a%20b", "client", nil),
            ("PUT", "/state?client=", "client", #"{"currentAlbumIndex": 0}"#),
            ("POST", "/albums?index=-1", "index", #"{"title": "T", "artist": "A"}"#),
            ("POST", "/albums?index=two", "index", #"{"title": "T", "artist": "A"}"#),
            ("POST", "/views/all/albums?index=x", "index", #"{"title": "T", "artist": "A"}"#),
            ("DELETE", "/libraries/nothere?force=perhaps", "force", nil),
            ("GET", "/libraries/default/events?library=default", "library", nil),
            ("GET", "/events?library=Not_An_Id", "library", nil),
            ("GET", "/albums/01HZY8Q6V9T3X2K7M4N5P6R7S8/cover?size=7", "size", nil),
        ]
        for item in cases {
            let response = try send(item.method, item.path, json: item.json)
            let where_ = "\(item.method) \(item.path)"
            #expect(response.status == 400, "\(where_): \(response.status) \(response.text)")
            guard response.status == 400 else { continue }
            let problem = try response.json()
            #expect(problem["type"] as? String == QueryParameters.problemType, "\(where_)")
            #expect(problem["title"] as? String == "Invalid query parameter", "\(where_)")
            #expect((problem["detail"] as? String)?.hasPrefix(item.parameter) == true, "\(where_): \(problem["detail"] ?? "")")
            let errors = problem["errors"] as? [[String: Any]]
            #expect(errors?.first?["field"] as? String == item.parameter, "\(where_)")
        }
    }

    /// The values a boolean or a year may take are accepted, so the 400s above are not blanket refusals.
    @Test func goodValuesStillWork() throws {
        for path in ["/albums?count=true", "/albums?count=false", "/albums?count", "/albums?yearFrom=1000&yearTo=9999",
                     "/albums?sort=-year&limit=500", "/albums?offset=0", "/changes?since=0&limit=1000", "/views/all/albums?count=true"] {
            #expect(try send("GET", path).status == 200, "\(path)")
        }
        let counted = try send("GET", "/albums?count=false").json()
        #expect(counted["total"] == nil)
        #expect(try send("GET", "/albums?count=true").json()["total"] as? Int == 3)
    }

    /// `since` ahead of the library is the client's mistake: 400 naming the current version,
    /// not the 410 that would send a syncing client into a full reload.
    @Test func sinceAheadOfTheLibraryIsA400NamingTheCurrentVersion() throws {
        let version = try #require(try send("GET", "/albums").json()["version"] as? Int)
        #expect(try send("GET", "/changes?since=\(version)").status == 200)
        let ahead = try send("GET", "/changes?since=\(version + 1)")
        #expect(ahead.status == 400)
        let problem = try ahead.json()
        #expect((problem["detail"] as? String)?.contains("current version \(version)") == true)
        #expect((problem["errors"] as? [[String: Any]])?.first?["field"] as? String == "since")
    }

    /// An empty `Last-Event-ID` (or `?lastEventId=`) is no id: the stream starts live, with no
    /// `library.outdated`; the next event is the next change.
    @Test func anEmptyLastEventIDStartsLive() throws {
        for (header, query) in [("", ""), (" ", ""), (nil, "?lastEventId="), (nil, "?lastEventId=%20")] as [(String?, String)] {
            let stream = try SSEClient(port: port, lastEventID: header, query: query)
            _ = try send("POST", "/albums", json: #"{"title": "Live", "artist": "Now"}"#)
            let first = try #require(try stream.next())
            #expect(first.name == "album.added", "header \(header ?? "none"), query \(query): got \(first.name)")
        }
        // A real but unknown id still says so.
        let unknown = try SSEClient(port: port, lastEventID: "nonsense")
        #expect(try unknown.next()?.name == "library.outdated")
    }

    /// The X-Request-Id policy: a well-formed id (1 to 128 of letters, digits, `-._:/+=@`) is
    /// kept; anything else is replaced by a generated one.
    @Test func requestIDsAreKeptOnlyWhenWellFormed() throws {
        let kept = ["trace-42", "0f8c2f7e-5a4b-4c3d-9e2f-1a2b3c4d5e6f", "01HZY8Q6V9T3X2K7M4N5P6R7S8", "a/b+c=d@e:f.g_h", String(repeating: "x", count: 128)]
        for id in kept {
            let response = try RawHTTPClient.request(port: port, path: "/healthz", headers: ["X-Request-Id": id])
            #expect(response.header("X-Request-Id") == id)
        }
        let replaced = ["has space", "quote\"d", "semi;colon", "comma,list", "<tag>", String(repeating: "x", count: 129)]
        for id in replaced {
            let response = try RawHTTPClient.request(port: port, path: "/healthz", headers: ["X-Request-Id": id])
            let given = try #require(response.header("X-Request-Id"))
            #expect(given != id && RequestIDMiddleware.isAcceptable(given), "\(id) -> \(given)")
        }
    }
}
