import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryServer

/// `/views`, answered in process: definitions and their problems, the paged view list (position order,
/// value sorts, filters, cursors, ETag/304 from the request model), index addressing through a
/// view with undo in the owning library, and a cursor walk while another task changes all
/// three sources.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) final class ViewRouteTests {
    let app: BlueLibraryApp
    /// The app's routes, answered in process (no socket).
    let routes: InProcessClient
    static let sources = ["default", "jazz", "rock"]
    /// Albums per library at the start.
    static let perLibrary = 6

    init() throws {
        // Identical requests sent at once from one address are each admitted (no per-client
        // read limit here): they share one store read.
        app = try InMemoryApp.app {
            $0.seed = false
            $0.maxReadsPerClient = 0
        }
        routes = InProcessClient(app)
        for library in Self.sources.dropFirst() {
            try #require(try send("POST", "/libraries", #"{"id": "\#(library)"}"#).status == 201)
        }
        for library in Self.sources {
            for n in 0..<Self.perLibrary {
                let body = #"{"title": "\#(library.prefix(1).uppercased())\#(n) \#(n % 2 == 0 ? "even" : "odd")", "artist": "A\#(n % 3)", "year": \#(1990 + n)}"#
                try #require(try send("POST", "/libraries/\(library)/albums", body).status == 201)
            }
        }
    }

    deinit { app.shutdown() }

    func get(_ path: String, headers: [String: String] = [:]) throws -> RawHTTPClient.Response {
        routes.request(path: path, headers: headers)
    }

    @discardableResult
    func send(_ method: String, _ path: String, _ json: String? = nil) throws -> RawHTTPClient.Response {
        routes.request(method: method, path: path, headers: json == nil ? [:] : ["Content-Type": "application/json"],
                       body: Array((json ?? "").utf8))
    }

    func createView(_ id: String = "all", sources: [String] = sources, filter: String? = nil) throws -> RawHTTPClient.Response {
        let list = sources.map { "\"\($0)\"" }.joined(separator: ",")
        return try send("POST", "/views", #"{"id": "\#(id)", "sources": [\#(list)]\#(filter.map { ", \"filter\": \($0)" } ?? "")}"#)
    }

    /// Follows `Link: rel="next"` from `path` to the end; every page's items.
    func follow(_ path: String) throws -> [[String: Any]] {
        var items: [[String: Any]] = []
        var next: String? = path
        while let target = next {
            let response = try get(target)
            try #require(response.status == 200, "\(target): \(response.text)")
            let page = try response.json()
            items += page["items"] as? [[String: Any]] ?? []
            next = response.header("Link").flatMap(Self.linkTarget)
            if next != nil { #expect(page["next"] is String) } else { #expect(page["next"] is NSNull) }
        }
        return items
    }

    static func linkTarget(_ link: String) -> String? {
        guard let range = link.range(of: #"<[^>]+>"#, options: .regularExpression), let url = URL(string: String(link[range].dropFirst().dropLast()))
        else { return nil }
        return url.path + "?" + (url.query ?? "")
    }

    static func problemType(_ response: RawHTTPClient.Response) -> String? {
        (try? response.json())?["type"] as? String
    }

    static func fields(_ response: RawHTTPClient.Response) -> [String] {
        ((try? response.json())?["errors"] as? [[String: Any]] ?? []).compactMap { $0["field"] as? String }
    }

    @Test func definitionsAndTheirProblems() throws {
        let created = try createView(filter: #"{"yearFrom": 1991}"#)
        #expect(created.status == 201, "\(created.text)")
        #expect(created.header("Location")?.hasSuffix("/views/all") == true)
        let view = try created.json()
        #expect(view["name"] as? String == "all", "the name defaults to the id")
        #expect(view["sources"] as? [String] == Self.sources)
        let first = try #require(view["revision"] as? Int)
        #expect(first >= 1)
        #expect((view["filter"] as? [String: Any])?.keys.sorted() == ["yearFrom"])
        #expect((view["versions"] as? [String: Any])?.keys.sorted() == Self.sources)

        #expect(try createView().status == 409, "the id is taken")
        let unknown = try createView("other", sources: ["default", "nope"])
        #expect(unknown.status == 422)
        #expect(Self.fields(unknown).allSatisfy { $0.hasPrefix("sources") } && !Self.fields(unknown).isEmpty)
        #expect(Self.fields(try createView("Bad Id")) == ["id"])
        #expect(routes.request(method: "POST", path: "/views", body: Array("{}".utf8)).status == 415)

        let list = try get("/views").json()
        #expect((list["views"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["all"])

        let renamed = try send("PATCH", "/views/all", #"{"name": "Everything", "filter": null}"#)
        #expect(renamed.status == 200, "\(renamed.text)")
        #expect(try renamed.json()["revision"] as? Int == first + 1)
        #expect((try renamed.json()["filter"] as? [String: Any])?.isEmpty == true)
        #expect(Self.fields(try send("PATCH", "/views/all", #"{"id": "x"}"#)) == ["id"])
        #expect(try get("/views/all").json()["name"] as? String == "Everything")

        let missing = try get("/views/nope")
        #expect(missing.status == 404 && Self.problemType(missing) == "urn:bluelibrary:problem:view-not-found")
        #expect(try get("/views/NOT_AN_ID/albums").status == 404)
        #expect(try send("DELETE", "/views/all").status == 204)
        #expect(try get("/views/all").status == 404)
        #expect(try send("DELETE", "/views/all").status == 404)
        #expect(try get("/libraries/jazz").status == 200, "deleting a view leaves its libraries")
    }

    @Test func positionOrderValueSortsAndFilters() throws {
        _ = try createView()
        let items = try follow("/views/all/albums?limit=5")
        let expectedTitles = Self.sources.flatMap { library in
            (0..<Self.perLibrary).map { "\(library.prefix(1).uppercased())\($0) \($0 % 2 == 0 ? "even" : "odd")" }
        }
        #expect(items.compactMap { $0["title"] as? String } == expectedTitles, "the sources' orders concatenated")
        #expect(items.compactMap { $0["index"] as? Int } == Array(0..<expectedTitles.count))
        #expect(items.compactMap { $0["library"] as? String } == Self.sources.flatMap { Array(repeating: $0, count: Self.perLibrary) })

        let counted = try get("/views/all/albums?limit=2&count=true").json()
        #expect(counted["total"] as? Int == expectedTitles.count)
        #expect((counted["versions"] as? [String: Any])?.keys.sorted() == Self.sources)

        // A value sort merges the sources by (value, id): compare with the sorted whole.
        for sort in ["title", "-year", "artist"] {
            let merged = try follow("/views/all/albums?limit=4&sort=\(sort)")
            let reference = items.sorted { a, b in
                let key = sort.trimmingCharacters(in: ["-"])
                let (x, y) = (a[key], b[key])
                let (ida, idb) = (a["id"] as! String, b["id"] as! String)
                if let x = x as? String, let y = y as? String, x.lowercased() != y.lowercased() {
                    return sort.hasPrefix("-") ? x.lowercased() > y.lowercased() : x.lowercased() < y.lowercased()
                }
                if let x = x as? Int, let y = y as? Int, x != y { return sort.hasPrefix("-") ? x > y : x < y }
                return sort.hasPrefix("-") ? ida > idb : ida < idb
            }
            #expect(merged.compactMap { $0["id"] as? String } == reference.compactMap { $0["id"] as? String }, "sort=\(sort)")
            #expect(merged.allSatisfy { $0["index"] == nil && $0["library"] is String })
        }

        // The request's filter and the view's filter both apply.
        let odd = try follow("/views/all/albums?limit=2&q=odd")
        #expect(odd.count == 9 && odd.allSatisfy { ($0["title"] as? String)?.hasSuffix("odd") == true && $0["index"] == nil })
        _ = try createView("nineties", filter: #"{"yearFrom": 1993}"#)
        let late = try follow("/views/nineties/albums?limit=3&q=odd")
        #expect(late.compactMap { $0["year"] as? Int }.sorted() == [1993, 1993, 1993, 1995, 1995, 1995])
        let filteredView = try follow("/views/nineties/albums?limit=4")
        #expect(filteredView.count == 9 && filteredView.allSatisfy { $0["index"] == nil }, "a view's filter makes its list a filtered one")
        #expect(try get("/views/nineties/albums/at/0").json()["title"] as? String == "D0 even", "view indexes ignore the view's filter")
    }

    @Test func indexAddressingWritesToTheOwningLibraryAndUndoesThere() throws {
        _ = try createView()
        let atFirstJazz = try get("/views/all/albums/at/\(Self.perLibrary)")
        #expect(atFirstJazz.status == 200)
        #expect(try atFirstJazz.json()["title"] as? String == "J0 even")
        #expect(try atFirstJazz.json()["library"] as? String == "jazz")
        #expect(try atFirstJazz.json()["index"] as? Int == Self.perLibrary)
        let tag = try #require(atFirstJazz.header("ETag"))
        #expect(try get("/views/all/albums/at/\(Self.perLibrary)", headers: ["If-None-Match": tag]).status == 304)
        #expect(try get("/views/all/albums/at/\(3 * Self.perLibrary)").status == 404)

        // The last of default moved to the front of jazz keeps its view index: a new tag all the same.
        let last = try get("/views/all/albums/at/\(Self.perLibrary - 1)")
        let lastID = try #require(try last.json()["id"] as? String)
        #expect(try send("POST", "/albums/\(lastID)/move", #"{"library": "jazz", "index": 0}"#).status == 200)
        let moved = try get("/views/all/albums/at/\(Self.perLibrary - 1)", headers: ["If-None-Match": try #require(last.header("ETag"))])
        let movedBody = try moved.json()
        #expect(moved.status == 200 && movedBody["library"] as? String == "jazz" && movedBody["id"] as? String == lastID)
        #expect(try send("POST", "/undo").status == 200, "the move is undone from the source library")

        // Delete through the view, undo in the library that held it.
        let removed = try send("DELETE", "/views/all/albums/at/\(Self.perLibrary)")
        #expect(removed.status == 200)
        #expect(try removed.json()["library"] as? String == "jazz")
        #expect(try get("/libraries/jazz/albums?count=true&limit=1").json()["total"] as? Int == Self.perLibrary - 1)
        #expect(try get("/views/all/albums/at/\(Self.perLibrary)").json()["title"] as? String == "J1 odd")
        #expect((try get("/libraries/jazz/undo").json()["next"] as? String)?.contains("J0 even") == true, "on jazz's stack")
        #expect(try send("POST", "/libraries/jazz/undo").status == 200)
        #expect(try get("/views/all/albums/at/\(Self.perLibrary)").json()["title"] as? String == "J0 even")

        // Add inside jazz, then with no index (the end of the last source).
        let inside = try send("POST", "/views/all/albums?index=\(Self.perLibrary + 1)", #"{"title": "Inserted", "artist": "X"}"#)
        #expect(inside.status == 201, "\(inside.text)")
        #expect(try inside.json()["library"] as? String == "jazz")
        #expect(try inside.json()["index"] as? Int == Self.perLibrary + 1)
        let id = try #require(try inside.json()["id"] as? String)
        #expect(inside.header("Location")?.hasSuffix("/libraries/jazz/albums/\(id)") == true)
        #expect(try get("/libraries/jazz/albums/at/1").json()["id"] as? String == id)
        // On the boundary between default and jazz: the end of the earlier source.
        let boundary = try send("POST", "/views/all/albums?index=\(Self.perLibrary)", #"{"title": "Boundary", "artist": "X"}"#)
        #expect(try boundary.json()["library"] as? String == "default")
        #expect(try boundary.json()["index"] as? Int == Self.perLibrary)
        #expect(try send("POST", "/libraries/default/undo").status == 200)
        let appended = try send("POST", "/views/all/albums", #"{"title": "Last", "artist": "X"}"#)
        #expect(try appended.json()["library"] as? String == "rock")
        #expect(try appended.json()["index"] as? Int == 3 * Self.perLibrary + 1)
        #expect(try send("POST", "/libraries/rock/undo").status == 200)
        #expect(try send("POST", "/libraries/jazz/undo").status == 200)
        #expect(try get("/views/all/albums?count=true&limit=1").json()["total"] as? Int == 3 * Self.perLibrary)
    }

    @Test func viewPagesRevalidateFromMemoryUntilAnySourceChanges() throws {
        _ = try createView()
        let path = "/views/all/albums?limit=4"
        let first = try get(path)
        let tag = try #require(first.header("ETag"))
        let loads = app.viewPages.cache.loadCount
        #expect(try get(path, headers: ["If-None-Match": tag]).status == 304)
        #expect(try get(path).body == first.body)
        #expect(app.viewPages.cache.loadCount == loads, "304 and a current page need no load")

        let metrics = try MetricsTests.scrape(.inProcess(routes))
        #expect(metrics.types["bluelibrary_view_page_cache_hits_total"] == "counter")
        #expect(metrics.value("bluelibrary_view_page_cache_hits_total") >= 2, "the 304 and the cached 200")
        #expect(metrics.value("bluelibrary_view_page_cache_misses_total") == 1)
        #expect(metrics.value("bluelibrary_view_page_cache_entries") == 1)

        // A change in the last source only (not on the first page) still outdates the page.
        #expect(try send("POST", "/libraries/rock/albums", #"{"title": "New", "artist": "X"}"#).status == 201)
        let after = try get(path, headers: ["If-None-Match": tag])
        #expect(after.status == 200)
        #expect(after.header("ETag") != tag)
        #expect(app.viewPages.cache.loadCount == loads + 1)

        // Identical concurrent requests for an outdated page share one read.
        let before = app.viewPages.cache.loadCount
        let group = DispatchGroup()
        let codes = Mutex<[Int]>([])
        let routes = self.routes
        for _ in 0..<12 {
            DispatchQueue.global().async(group: group) {
                let status = routes.request(path: "/views/all/albums?limit=7&sort=title").status
                codes.withLock { $0.append(status) }
            }
        }
        group.wait()
        #expect(codes.withLock { $0 } == Array(repeating: 200, count: 12))
        #expect(app.viewPages.cache.loadCount - before == 1)

        // A new definition is a new version too.
        let current = try #require(after.header("ETag"))
        #expect(try send("PATCH", "/views/all", #"{"sources": ["rock", "jazz"]}"#).status == 200)
        let redefined = try get(path, headers: ["If-None-Match": current])
        #expect(redefined.status == 200)
        #expect((try redefined.json()["items"] as? [[String: Any]])?.first?["library"] as? String == "rock")
    }

    @Test func cursorsBelongToTheirViewAndDefinition() throws {
        _ = try createView()
        _ = try createView("other")
        let page = try get("/views/all/albums?limit=2").json()
        let cursor = try #require(page["next"] as? String)
        #expect(try get("/views/all/albums?limit=2&cursor=\(cursor)").status == 200)
        for misused in ["/views/other/albums?limit=2&cursor=\(cursor)", "/albums?limit=2&cursor=\(cursor)",
                        "/views/all/albums?limit=2&sort=title&cursor=\(cursor)"] {
            let refused = try get(misused)
            #expect(refused.status == 400, "\(misused): \(refused.text)")
            #expect(Self.problemType(refused) == "urn:bluelibrary:problem:invalid-cursor")
        }
        // A changed definition ends the walks of the old one: start again.
        #expect(try send("PATCH", "/views/all", #"{"sources": ["jazz", "rock"]}"#).status == 200)
        let stale = try get("/views/all/albums?limit=2&cursor=\(cursor)")
        #expect([400, 410].contains(stale.status), "\(stale.text)")
        #expect((try stale.json()["detail"] as? String)?.isEmpty == false)
    }

    @Test func aSourceDeletedWithForceLeavesTheViewAndOutdatesItsPages() throws {
        let revision = try #require(try createView().json()["revision"] as? Int)
        let first = try get("/views/all/albums?limit=100")
        let tag = try #require(first.header("ETag"))
        #expect(try send("DELETE", "/libraries/jazz").status == 409, "jazz is used by the view")
        #expect(try send("DELETE", "/libraries/jazz?force=true").status == 204)
        let after = try get("/views/all/albums?limit=100", headers: ["If-None-Match": tag])
        #expect(after.status == 200)
        let items = try #require(try after.json()["items"] as? [[String: Any]])
        #expect(Set(items.compactMap { $0["library"] as? String }) == ["default", "rock"])
        let view = try get("/views/all").json()
        #expect(view["sources"] as? [String] == ["default", "rock"])
        #expect(view["revision"] as? Int == revision + 1)

        // Every source gone: the view lists nothing and refuses adds until PATCH gives it sources.
        #expect(try createView("rocks", sources: ["rock"]).status == 201)
        let rockPage = try get("/views/rocks/albums?count=true")
        #expect(try rockPage.json()["total"] as? Int == Self.perLibrary)
        #expect(try send("DELETE", "/libraries/rock?force=true").status == 204)
        #expect(try get("/views/rocks").json()["sources"] as? [String] == [])
        let empty = try get("/views/rocks/albums?count=true", headers: ["If-None-Match": try #require(rockPage.header("ETag"))])
        #expect(empty.status == 200)
        #expect(try empty.json()["total"] as? Int == 0 && (try empty.json()["items"] as? [Any])?.isEmpty == true)
        #expect(try send("POST", "/views/rocks/albums", #"{"title": "Nowhere", "artist": "X"}"#).status == 409)
        #expect(try send("PATCH", "/views/rocks", #"{"sources": ["default"]}"#).status == 200)
        #expect(try get("/views/rocks/albums?count=true").json()["total"] as? Int == Self.perLibrary)
    }

    @Test func viewWritesAreIdempotentAndProblemsNameTheView() throws {
        _ = try createView()
        let headers = ["Content-Type": "application/json", "Idempotency-Key": "view-add-1"]
        let body = Array(#"{"title": "Once", "artist": "Only"}"#.utf8)
        let first = routes.request(method: "POST", path: "/views/all/albums?index=0", headers: headers, body: body)
        let again = routes.request(method: "POST", path: "/views/all/albums?index=0", headers: headers, body: body)
        #expect(first.status == 201 && again.status == 201)
        #expect(again.header("Idempotent-Replayed") == "true" && again.body == first.body)
        #expect(try get("/libraries/default/albums?count=true&limit=1").json()["total"] as? Int == Self.perLibrary + 1)

        let invalid = try createView("x", sources: [])
        #expect(invalid.status == 422)
        #expect(try invalid.json()["title"] as? String == "Invalid view")
        let badAlbum = try send("POST", "/views/all/albums", #"{"artist": "No title"}"#)
        #expect(badAlbum.status == 422 && Self.fields(badAlbum) == ["title"])
        let pretty = try get("/views/all/albums?limit=1&pretty")
        #expect(pretty.text.contains("\n  \"items\""))
    }

    /// Walks the view in position order with cursors while another task adds, deletes and moves
    /// albums (within and between libraries) in all three sources, a few operations per page.
    /// Every album present throughout is seen exactly once; nothing is seen twice.
    /// The same walk in value orders (keyset walks by value and id: exact under adds, deletes
    /// and moves, which change no value).
    @Test(arguments: [("position", UInt64(13)), ("position", 29), ("title", 7), ("-year", 11)])
    func cursorWalkIsExactWhileTheSourcesChange(sort: String, seed: UInt64) throws {
        for library in Self.sources {
            for n in 0..<10 { try #require(try send("POST", "/libraries/\(library)/albums", #"{"title": "More \#(n)", "artist": "B"}"#).status == 201) }
        }
        _ = try createView()
        let initial = try follow("/views/all/albums?limit=100")
        let initialIDs = Set(initial.compactMap { $0["id"] as? String })
        #expect(initialIDs.count == 3 * (Self.perLibrary + 10))

        let shared = WalkMutations()
        var owner: [String: String] = [:]
        for item in initial { owner[item["id"] as! String] = item["library"] as? String }
        // Lockstep with overlap: each page lets the other task run one batch of changes,
        // which runs while the next page is read; the walk waits for a batch to end before
        // letting the next one start (so every batch really happens during the walk).
        let turns = DispatchSemaphore(value: 0)
        let batchDone = DispatchSemaphore(value: 0)
        let routes = self.routes
        let mutator = Thread { [owner] in
            var owner = owner
            var random = SeededGenerator(seed: seed)
            var serial = 0
            func send(_ method: String, _ path: String, _ json: String? = nil) -> [String: Any]? {
                let response = routes.request(method: method, path: path, headers: json == nil ? [:] : ["Content-Type": "application/json"],
                                              body: Array((json ?? "").utf8))
                guard (200..<300).contains(response.status) else { return nil }
                return try? response.json()
            }
            while true {
                turns.wait()
                if shared.finished.load(ordering: .acquiring) { return }
                for _ in 0..<3 {
                    let live = owner.keys.sorted()
                    let library = ViewRouteTests.sources.randomElement(using: &random)!
                    switch Int.random(in: 0..<4, using: &random) {
                    case 0:
                        serial += 1
                        let index = Int.random(in: 0...12, using: &random)
                        if let made = send("POST", "/libraries/\(library)/albums?index=\(index)", #"{"title": "Added \#(serial)", "artist": "M"}"#),
                           let id = made["id"] as? String {
                            owner[id] = library
                            shared.log.withLock { _ = $0.added.insert(id) }
                        }
                    case 1:
                        guard let id = live.randomElement(using: &random), let from = owner[id] else { continue }
                        if send("DELETE", "/libraries/\(from)/albums/\(id)") != nil {
                            owner[id] = nil
                            shared.log.withLock { _ = $0.deleted.insert(id) }
                        }
                    default:
                        guard let id = live.randomElement(using: &random), let from = owner[id] else { continue }
                        let index = Int.random(in: 0...12, using: &random)
                        let body = from == library ? #"{"index": \#(index)}"# : #"{"library": "\#(library)", "index": \#(index)}"#
                        if let moved = send("POST", "/libraries/\(from)/albums/\(id)/move", body) {
                            owner[id] = moved["library"] as? String ?? from
                            shared.log.withLock { $0.moves += 1 }
                        }
                    }
                }
                batchDone.signal()
            }
        }
        mutator.start()

        var seen: [String] = []
        var batchRunning = false
        var next: String? = "/views/all/albums?limit=2&sort=\(sort)"
        while let target = next {
            let response = try get(target)
            try #require(response.status == 200, "\(target): \(response.text)")
            seen += (try response.json()["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            next = response.header("Link").flatMap(Self.linkTarget)
            if batchRunning { batchDone.wait() }
            turns.signal()  // the other task changes the sources while the next page is read
            batchRunning = true
        }
        if batchRunning { batchDone.wait() }
        shared.finished.store(true, ordering: .releasing)
        turns.signal()
        #expect(eventually { mutator.isFinished })

        let mutations = shared.log.withLock { $0 }
        #expect(mutations.moves > 0 && !mutations.deleted.isEmpty && !mutations.added.isEmpty, "the walk ran while things changed")
        let throughout = initialIDs.subtracting(mutations.deleted)
        let counts = Dictionary(seen.map { ($0, 1) }, uniquingKeysWith: +)
        #expect(counts.filter { $0.value > 1 }.isEmpty, "sort=\(sort) seed=\(seed): seen twice: \(counts.filter { $0.value > 1 }.keys.sorted())")
        #expect(throughout.subtracting(seen).isEmpty, "sort=\(sort) seed=\(seed): missed: \(throughout.subtracting(seen).sorted())")
        #expect(Set(seen).isSubset(of: initialIDs.union(mutations.added)))
    }
}

/// What the mutating task of ``ViewRouteTests/cursorWalkIsExactWhileTheSourcesChange(sort:seed:)`` did.
private final class WalkMutations: Sendable {
    struct Log {
        var deleted: Set<String> = []
        var added: Set<String> = []
        var moves = 0
    }

    let log = Mutex(Log())
    let finished = Atomic(false)
}
