import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// `sorting.ignoredArticles`: a change remakes the library's artist keys in the background
/// (`SortKeyRebuild`), and `sort=artist` follows; bad articles are 422 naming the field.
@Suite(.timeLimit(.minutes(2)), .ownThreads) struct SortSettingsTests {
    @Test func changingTheIgnoredArticlesReordersTheArtistsSoon() throws {
        let app = try InMemoryApp.app { $0.seed = false }
        app.start()  // the background services, the rebuild among them
        defer { app.shutdown() }
        let routes = InProcessClient(app)
        for artist in ["The Beatles", "Abba", "Björk", "Die Ärzte"] {
            let body = #"{"title": "Album", "artist": "\#(artist)"}"#
            #expect(routes.request(method: "POST", path: "/albums", headers: ["Content-Type": "application/json"], body: Array(body.utf8)).status == 201)
        }
        func artists() throws -> [String] {
            let page = try routes.request(path: "/albums?sort=artist").json()
            return (page["items"] as? [[String: Any]] ?? []).compactMap { $0["artist"] as? String }
        }
        // The default (The, A, An): "The Beatles" under B.
        #expect(try artists() == ["Abba", "The Beatles", "Björk", "Die Ärzte"])
        func patch(_ json: String) -> RawHTTPClient.Response {
            routes.request(method: "PATCH", path: "/settings", headers: ["Content-Type": "application/merge-patch+json"], body: Array(json.utf8))
        }
        #expect(patch(#"{"sorting": {"ignoredArticles": ["The", "Die"]}}"#).status == 200)
        // Remade in the background: after a pass that began after the change, "Die Ärzte" sorts
        // under A (the settings observer woke the service; this waits for a pass to end).
        #expect(app.sortKeyRebuild.passNow(timeout: .seconds(30)))
        #expect(try artists() == ["Abba", "Die Ärzte", "The Beatles", "Björk"], "abba < arzte < beatles < bjork")
        // Bad articles change nothing and name the field.
        for bad in [#"{"sorting": {"ignoredArticles": ["two words"]}}"#, #"{"sorting": {"ignoredArticles": "The"}}"#,
                    #"{"sorting": {"ignoredArticles": [1]}}"#] {
            let refused = patch(bad)
            #expect(refused.status == 422, "\(bad)")
            #expect((try refused.json()["errors"] as? [[String: Any]])?.first?["field"] as? String == "sorting.ignoredArticles", "\(refused.text)")
        }
        let settings = try routes.request(path: "/settings").json()
        #expect((settings["sorting"] as? [String: Any])?["ignoredArticles"] as? [String] == ["The", "Die"])
    }
}
