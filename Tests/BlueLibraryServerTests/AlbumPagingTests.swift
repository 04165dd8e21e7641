import BlueLibraryTestSupport
import Essentials
import Foundation
import HTTPServer
import HTTPTestSupport
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryServer

/// `GET /albums` paging, answered in process: cursors and Link headers, sorts and filters, ETags from the
/// request model, and the model's one-read-for-many behaviour.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class AlbumPagingTests {
    let app: BlueLibraryApp
    /// The app's routes, answered in process (no socket).
    let routes: InProcessClient

    init() throws {
        // Identical requests sent at once from one address are each admitted (no per-client
        // read limit here): they share one store read.
        app = try InMemoryApp.app {
            $0.seed = false
            $0.maxReadsPerClient = 0
        }
        routes = InProcessClient(app)
        for n in 0..<23 {
            let body = #"{"title": "Album \#(n)", "artist": "\#(n % 2 == 0 ? "Even" : "Odd")", "year": \#(1980 + n)}"#
            _ = routes.request(method: "POST", path: "/albums", headers: ["Content-Type": "application/json"], body: Array(body.utf8))
        }
    }

    deinit { app.shutdown() }

    func get(_ path: String, headers: [String: String] = [:]) throws -> RawHTTPClient.Response {
        routes.request(path: path, headers: headers)
    }

    /// Follows `Link: rel="next"` from `path` to the end (on `client`, this suite's app by
    /// default); returns the titles.
    func follow(_ path: String, on client: InProcessClient? = nil) throws -> [String] {
        var titles: [String] = []
        var next: String? = path
        while let target = next {
            let response = (client ?? routes).request(path: target)
            #expect(response.status == 200)
            let page = try response.json()
            titles += (page["items"] as? [[String: Any]] ?? []).compactMap { $0["title"] as? String }
            next = response.header("Link").flatMap { link in
                link.range(of: #"<[^>]+>"#, options: .regularExpression).map { String(link[$0].dropFirst().dropLast()) }
            }.map { URL(string: $0)!.path + "?" + URL(string: $0)!.query! }
            if next != nil { #expect(page["next"] is String) } else { #expect(page["next"] is NSNull) }
        }
        return titles
    }

    @Test func linkHeadersWalkEveryPageOnce() throws {
        let titles = try follow("/albums?limit=5")
        #expect(titles == (0..<23).map { "Album \($0)" })
        let byYearDescending = try follow("/albums?limit=4&sort=-year&artist=even")
        #expect(byYearDescending == stride(from: 22, through: 0, by: -2).map { "Album \($0)" })
    }

    /// `sort=genre` orders by the genre folded as titles are (case and accents aside), ties by
    /// id, both ways, a page at a time; the genre sort's cursor is refused by another sort.
    @Test func theGenreSortFoldsGenresAndWalksPageByPage() throws {
        let app = try InMemoryApp.app { $0.seed = false }
        defer { app.shutdown() }
        let routes = InProcessClient(app)
        let genres = ["rock", "Ambient", "Électro", "jazz", "Blues", "Post-rock", "Zydeco", "electronic"]
        for (n, genre) in genres.enumerated() {
            let body = #"{"title": "\#(genre) \#(n)", "artist": "A", "genre": "\#(genre)"}"#
            #expect(routes.request(method: "POST", path: "/albums", headers: ["Content-Type": "application/json"], body: Array(body.utf8)).status == 201)
        }
        let expected = ["Ambient", "Blues", "Électro", "electronic", "jazz", "Post-rock", "rock", "Zydeco"].map { genre in
            "\(genre) \(genres.firstIndex(of: genre)!)"
        }
        #expect(try follow("/albums?sort=genre&limit=3", on: routes) == expected)
        #expect(try follow("/albums?sort=-genre&limit=3", on: routes) == expected.reversed())
        let offsetPage = try routes.request(path: "/albums?sort=genre&offset=5&limit=2").json()
        #expect((offsetPage["items"] as? [[String: Any]] ?? []).compactMap { $0["title"] as? String } == Array(expected[5..<7]))
        let cursor = try #require(try routes.request(path: "/albums?sort=genre&limit=2").json()["next"] as? String)
        #expect(routes.request(path: "/albums?sort=title&limit=2&cursor=\(cursor)").status == 400)
    }

    /// `q` is a search: every word, in any field and order, the last as a prefix, folded in
    /// any script; a `q` with no word to search for is 400 naming it.
    @Test func aSearchFindsItsWordsInAnyFieldFolded() throws {
        let app = try InMemoryApp.app { $0.seed = false }
        defer { app.shutdown() }
        let routes = InProcessClient(app)
        for (title, artist, genre) in [("Homogenic", "Björk", "Electronic"), ("Takk...", "Sigur Rós", "Post-rock"),
                                       ("The Dark Side of the Moon", "Pink Floyd", "Rock"), ("Группа крови", "Виктор Цой", "Rock")] {
            let body = #"{"title": "\#(title)", "artist": "\#(artist)", "genre": "\#(genre)"}"#
            #expect(routes.request(method: "POST", path: "/albums", headers: ["Content-Type": "application/json"], body: Array(body.utf8)).status == 201)
        }
        func titles(_ q: String) throws -> [String] {
            let query = q.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? q
            let page = try routes.request(path: "/albums?q=\(query)&count=true").json()
            let titles = (page["items"] as? [[String: Any]] ?? []).compactMap { $0["title"] as? String }
            #expect(page["total"] as? Int == titles.count, "q=\(q)")
            return titles
        }
        #expect(try titles("bjork") == ["Homogenic"])
        #expect(try titles("BJÖRK") == ["Homogenic"])
        #expect(try titles("sigur ros") == ["Takk..."])
        #expect(try titles("floyd dark") == ["The Dark Side of the Moon"])
        #expect(try titles("pink flo") == ["The Dark Side of the Moon"])
        #expect(try titles("виктор") == ["Группа крови"])
        // Three genre matches of one rank: by relevance, ties by (random) id.
        #expect(try Set(titles("rock")) == ["Takk...", "The Dark Side of the Moon", "Группа крови"])
        #expect(try titles("loyd").isEmpty, "a piece inside a word is not found")
        let nothing = routes.request(path: "/albums?q=%22--%3A")
        #expect(nothing.status == 400)
        #expect((try nothing.json()["errors"] as? [[String: Any]])?.first?["field"] as? String == "q", "\(nothing.text)")
    }

    /// With `q` and no `sort` a list is by relevance: title and artist before genre, whole
    /// words before prefixes, the exact phrase first; `Link` walks it; `sort=relevance` needs `q`.
    @Test func aSearchIsSortedByRelevance() throws {
        let app = try InMemoryApp.app { $0.seed = false }
        defer { app.shutdown() }
        let routes = InProcessClient(app)
        let albums = [
            ("Side of the Dark", "Various", "Pop"),  // both words, not as the phrase: 1
            ("Dark Side", "Dark Side Rock", "Rock"),  // the phrase: 0
            ("Lovely Days", "Dark Sideburns", "Soul"),  // "side" only as a start, the phrase: 2
            ("Moon", "Nobody", "Dark Side"),  // only in the genre: 5
        ]
        for (title, artist, genre) in albums {
            let body = #"{"title": "\#(title)", "artist": "\#(artist)", "genre": "\#(genre)"}"#
            #expect(routes.request(method: "POST", path: "/albums", headers: ["Content-Type": "application/json"], body: Array(body.utf8)).status == 201)
        }
        func titles(_ path: String) throws -> [String] {
            let page = try routes.request(path: path).json()
            return (page["items"] as? [[String: Any]] ?? []).compactMap { $0["title"] as? String }
        }
        let ranked = ["Dark Side", "Side of the Dark", "Lovely Days", "Moon"]
        #expect(try titles("/albums?q=dark%20side") == ranked)
        #expect(try titles("/albums?q=dark%20side&sort=relevance") == ranked)
        #expect(try titles("/albums?q=dark%20side&sort=-relevance") == ranked.reversed())
        #expect(try titles("/albums?q=dark%20side&sort=position") == albums.map(\.0))
        // Link walks the same order a page at a time.
        var walked: [String] = []
        var next: String? = "/albums?q=dark%20side&limit=1"
        while let target = next {
            let response = routes.request(path: target)
            walked += ((try response.json())["items"] as? [[String: Any]] ?? []).compactMap { $0["title"] as? String }
            next = response.header("Link").flatMap { link in
                link.range(of: #"<[^>]+>"#, options: .regularExpression).map { String(link[$0].dropFirst().dropLast()) }
            }.map { URL(string: $0)!.path + "?" + URL(string: $0)!.query! }
        }
        #expect(walked == ranked)
        let refused = routes.request(path: "/albums?sort=relevance")
        #expect(refused.status == 400)
        #expect((try refused.json()["errors"] as? [[String: Any]])?.first?["field"] as? String == "sort", "\(refused.text)")
    }

    @Test func countAndIndexesOnlyWhereTheyMeanSomething() throws {
        let counted = try get("/albums?limit=2&count=true&q=album%201").json()
        #expect(counted["total"] as? Int == 11)  // 1, 10…19
        let items = try #require(counted["items"] as? [[String: Any]])
        #expect(items.allSatisfy { $0["index"] == nil }, "filtered lists carry no index")
        let plain = try get("/albums?limit=2").json()
        #expect(plain["total"] == nil)
        #expect((plain["items"] as? [[String: Any]])?.map { $0["index"] as? Int } == [0, 1])
    }

    @Test func versionETagsRevalidateWithoutTheStore() throws {
        let first = try get("/albums?limit=5")
        let tag = try #require(first.header("ETag"))
        let loadsBefore = app.pageCache.loadCount
        let again = try get("/albums?limit=5", headers: ["If-None-Match": tag])
        #expect(again.status == 304)
        let cached = try get("/albums?limit=5")
        #expect(cached.body == first.body)
        #expect(app.pageCache.loadCount == loadsBefore, "304 and a current page need no load")
        // A mutation moves the version on: the old tag no longer matches and the page reloads
        _ = routes.request(method: "DELETE", path: "/albums/at/0")
        #expect(try get("/albums?limit=5", headers: ["If-None-Match": tag]).status == 200)
        #expect(app.pageCache.loadCount == loadsBefore + 1)
    }

    /// A client that only revalidates keeps its 304 on the event loop after the page it once
    /// fetched aged out of the page cache (its query was proven valid by that page); an
    /// invalid query still never gets one.
    @Test func aRevalidationStaysOnTheFastPathAfterItsPageAgedOut() throws {
        let parts = try InMemoryApp.make { $0.seed = true }
        defer { parts.app.shutdown() }
        let tag = try #require(parts.routes.request(path: "/albums?limit=2").header("ETag"))
        parts.clock.advance(by: .seconds(61))  // past the page cache's maxAge
        func reply(_ target: String) throws -> HTTPReply {
            let request = HTTPRequest(method: .get, target: target, headers: HTTPHeaders([("Host", "test"), ("If-None-Match", tag)]), body: [])
            let resolution = parts.app.router.resolve(method: .get, path: request.path)
            let context = RequestContext(
                peerAddress: IPAddress("127.0.0.1")!, parameters: resolution.parameters, routePattern: resolution.pattern,
                routeIndex: resolution.routeIndex, cancellation: CancellationFlag())
            return try resolution.responder.respond(to: request, context: context)
        }
        guard case let .response(response) = try reply("/albums?limit=2") else {
            Issue.record("the revalidation went to a worker")
            return
        }
        #expect(response.status == .notModified)
        guard case .blocking = try reply("/albums?limit=2&sort=nonsense") else {
            Issue.record("a query never read is answered before it is parsed")
            return
        }
    }

    @Test func concurrentIdenticalRequestsCauseOneRead() throws {
        let before = app.pageCache.loadCount
        let group = DispatchGroup()
        let codes = Mutex<[Int]>([])
        let routes = self.routes
        for _ in 0..<16 {
            DispatchQueue.global().async(group: group) {
                let status = routes.request(path: "/albums?limit=7&sort=title").status
                codes.withLock { $0.append(status) }
            }
        }
        group.wait()
        #expect(codes.withLock { $0 } == Array(repeating: 200, count: 16))
        #expect(app.pageCache.loadCount - before == 1)
    }

    @Test func badPagingInputIsA400WithAReason() throws {
        let page = try get("/albums?limit=3").json()
        let cursor = try #require(page["next"] as? String)
        let otherQuery = try get("/albums?limit=3&sort=title&cursor=\(cursor)")
        #expect(otherQuery.status == 400)
        #expect((try otherQuery.json()["detail"] as? String)?.contains("different query") == true)
        #expect(try get("/albums?cursor=\(cursor.dropLast(4))").status == 400)
        #expect(try get("/albums?cursor=\(cursor)&offset=3").status == 400)
        #expect(try get("/albums?sort=colour").status == 400)
        #expect(try get("/albums?yearFrom=abc").status == 400)
    }
}
