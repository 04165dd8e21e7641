import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// What a list request costs beyond its page: `count=true` totals computed once per
/// (library version, filter) and shared by every page of that filter, and HEAD answered
/// without rendering the JSON body. Both are read from `/metrics` counters.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class ListCostTests {
    let app: BlueLibraryApp
    /// In process, on the in-memory store: what is counted is the route's work, not a connection's.
    let endpoint: Endpoint
    /// HEADs go over a socket: a HEAD's `Content-Length` (or its absence) is the connection's framing.
    let socket: Endpoint

    init() throws {
        let parts = try InMemoryApp.make { $0.seed = false }
        app = parts.app
        endpoint = .inProcess(parts.routes)
        app.start()
        socket = .port(app.port)
        for n in 0..<23 {
            try add(#"{"title": "Album \#(n)", "artist": "\#(n % 2 == 0 ? "Even" : "Odd")", "year": \#(1980 + n)}"#)
        }
    }

    deinit { app.shutdown() }

    func add(_ json: String, to path: String = "/albums") throws {
        let response = try endpoint.request(
            method: "POST", path: path, headers: ["Content-Type": "application/json"], body: Array(json.utf8))
        #expect(response.status == 201, "POST \(path): \(String(decoding: response.body, as: UTF8.self))")
    }

    func get(_ path: String, method: String = "GET", headers: [String: String] = [:]) throws -> RawHTTPClient.Response {
        try (method == "HEAD" ? socket : endpoint).request(method: method, path: path, headers: headers)
    }

    /// A counter from `/metrics` (it must be exported).
    func metric(_ name: String) throws -> Int {
        let text = try MetricsTests.scrape(endpoint)
        try #require(text.types[name] == "counter", "\(name) is not exported as a counter")
        return Int(text.value(name))
    }

    func computedCounts() throws -> Int { try metric("bluelibrary_filter_counts_computed_total") }

    func total(_ path: String) throws -> Int? {
        let response = try get(path)
        #expect(response.status == 200, "GET \(path)")
        return try response.json()["total"] as? Int
    }

    /// The path and query of a response's `Link: rel="next"`.
    func nextLink(_ response: RawHTTPClient.Response) throws -> String {
        let link = try #require(response.header("Link"))
        let range = try #require(link.range(of: #"<[^>]+>"#, options: .regularExpression))
        let url = try #require(URL(string: String(link[range].dropFirst().dropLast())))
        return url.path + "?" + (url.query ?? "")
    }

    @Test func aFilterIsCountedOncePerVersionWhateverThePage() throws {
        let before = try computedCounts()
        let first = try get("/albums?limit=3&count=true&artist=even")
        #expect(try first.json()["total"] as? Int == 12)
        #expect(try computedCounts() == before + 1, "the first page counts")
        // The next page, other sorts, limits and an offset of the same filter at the same
        // version: no count is computed again.
        #expect(try total(try nextLink(first)) == 12)
        #expect(try total("/albums?limit=5&count=true&artist=even&sort=-year") == 12)
        #expect(try total("/albums?limit=2&count=true&artist=even&sort=title&offset=4") == 12)
        #expect(try total("/albums?limit=7&count=true&artist=Even") == 12, "artist matches case-insensitively")
        #expect(try computedCounts() <= before + 2, "at most one more for the differently spelled artist")
        let settled = try computedCounts()
        #expect(try total("/albums?limit=4&count=true&artist=even&sort=-title") == 12)
        #expect(try computedCounts() == settled)
        // Another filter is another count.
        #expect(try total("/albums?limit=3&count=true&artist=odd") == 11)
        #expect(try computedCounts() == settled + 1)
        // A write moves the version on: the next page of the filter counts again, once.
        try add(#"{"title": "Album 23", "artist": "Even", "year": 2003}"#)
        #expect(try total("/albums?limit=3&count=true&artist=even") == 13)
        #expect(try total("/albums?limit=9&count=true&artist=even&sort=year") == 13)
        #expect(try computedCounts() == settled + 2)
    }

    @Test func aViewCountsEachSourceOncePerVersion() throws {
        for id in ["jazz", "rock"] {
            let created = try endpoint.request(
                method: "POST", path: "/libraries", headers: ["Content-Type": "application/json"],
                body: Array(#"{"id": "\#(id)", "name": "\#(id)"}"#.utf8))
            #expect(created.status == 201)
            for n in 0..<4 { try add(#"{"title": "\#(id) \#(n)", "artist": "Band", "year": \#(1990 + n)}"#, to: "/libraries/\(id)/albums") }
        }
        let view = try endpoint.request(
            method: "POST", path: "/views", headers: ["Content-Type": "application/json"],
            body: Array(#"{"id": "both", "name": "Both", "sources": ["jazz", "rock"]}"#.utf8))
        #expect(view.status == 201)
        let before = try computedCounts()
        let first = try get("/views/both/albums?limit=3&count=true&artist=band&sort=title")
        #expect(try first.json()["total"] as? Int == 8)
        #expect(try computedCounts() == before + 2, "one count per source")
        #expect(try total(try nextLink(first)) == 8)
        #expect(try total("/views/both/albums?limit=2&count=true&artist=band&sort=-year") == 8)
        // The library's own list of the same filter at the same version shares its count.
        #expect(try total("/libraries/jazz/albums?limit=2&count=true&artist=band") == 4)
        #expect(try computedCounts() == before + 2)
        // A write to one source: only that source is counted again.
        try add(#"{"title": "rock 4", "artist": "Band", "year": 1999}"#, to: "/libraries/rock/albums")
        #expect(try total("/views/both/albums?limit=3&count=true&artist=band&sort=title") == 9)
        #expect(try computedCounts() == before + 3)
    }

    /// HEAD of a list page: the GET's headers (ETag, Cache-Control, Content-Type, Link), no
    /// body rendered; `Content-Length` only once a GET has rendered the body, and then the
    /// GET's.
    func checkHead(_ path: String) throws {
        let renderedBefore = try metric("bluelibrary_list_bodies_rendered_total")
        let head = try get(path, method: "HEAD")
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(head.header("Content-Length") == nil, "no length before the body is rendered (RFC 9110 §9.3.2)")
        #expect(try metric("bluelibrary_list_bodies_rendered_total") == renderedBefore, "a HEAD renders no body (\(path))")

        let full = try get(path)
        #expect(full.status == 200)
        #expect(try metric("bluelibrary_list_bodies_rendered_total") == renderedBefore + 1, "the GET renders the page the HEAD read")
        for name in ["ETag", "Cache-Control", "Content-Type", "Link"] {
            #expect(head.header(name) != nil, "HEAD \(path) has \(name)")
            #expect(head.header(name) == full.header(name), "HEAD and GET \(path) agree on \(name)")
        }

        // Once rendered, a HEAD states the GET's length; still nothing rendered.
        let again = try get(path, method: "HEAD")
        #expect(again.header("Content-Length") == String(full.body.count))
        #expect(again.header("ETag") == full.header("ETag"))
        #expect(again.header("Link") == full.header("Link"))
        let conditional = try get(path, method: "HEAD", headers: ["If-None-Match": try #require(full.header("ETag"))])
        #expect(conditional.status == 304)
        #expect(try metric("bluelibrary_list_bodies_rendered_total") == renderedBefore + 1)
    }

    @Test func headOfAListPageRendersNoBody() throws {
        try checkHead("/albums?limit=4&sort=title&count=true")
        try checkHead("/libraries/default/albums?limit=3&sort=-year&artist=odd")
    }

    @Test func headOfAViewPageRendersNoBody() throws {
        let created = try endpoint.request(
            method: "POST", path: "/views", headers: ["Content-Type": "application/json"],
            body: Array(#"{"id": "all", "name": "All", "sources": ["default"]}"#.utf8))
        #expect(created.status == 201)
        try checkHead("/views/all/albums?limit=4&sort=title")
        try checkHead("/views/all/albums?limit=5")
    }

    @Test func headOfABadQueryIsTheGetsError() throws {
        let head = try get("/albums?limit=0", method: "HEAD")
        let full = try get("/albums?limit=0")
        #expect(head.status == 400)
        #expect(head.status == full.status)
    }
}
