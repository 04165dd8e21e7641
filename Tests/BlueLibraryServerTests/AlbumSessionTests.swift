#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// The tutorial's whole session over real HTTP against the real executable and a real
/// SQLite file: list the five, delete the current album, undo, add at an index, restart,
/// everything still there.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) struct AlbumSessionTests {
    static let seedTitles = ["Best of Bowie", "It's My Life", "Nothing Like The Sun", "Staring at the Sun", "American Pie"]

    func titles(_ port: Int) throws -> [String] {
        let page = try RawHTTPClient.request(port: port, path: "/albums").json()
        return (page["items"] as? [[String: Any]] ?? []).compactMap { $0["title"] as? String }
    }

    @Test func tutorialSessionSurvivesARestart() throws {
        let data = TestApp.temporaryDirectory()
        var server: ServerProcess? = try ServerProcess(dataDirectory: data)
        let port = server!.port

        // Given a fresh library: exactly the five seed albums, in order
        let list = try RawHTTPClient.request(port: port, path: "/albums?count=true")
        #expect(list.status == 200)
        #expect(list.header("ETag") != nil)
        let page = try list.json()
        #expect(page["total"] as? Int == 5)
        let items = try #require(page["items"] as? [[String: Any]])
        #expect(items.map { $0["title"] as? String } == Self.seedTitles)
        #expect(items[0]["artist"] as? String == "David Bowie")
        #expect(items[0]["year"] as? Int == 1992)
        #expect(items[0]["genre"] as? String == "Pop")
        #expect(items[0]["coverUrl"] as? String == "https://s3.amazonaws.com/CoverProject/album/album_david_bowie_best_of_bowie.png")
        #expect(items.map { $0["index"] as? Int } == [0, 1, 2, 3, 4])

        // The current album is saved (memento) and then deleted
        let saved = try RawHTTPClient.request(port: port, method: "PUT", path: "/state",
                                              headers: ["Content-Type": "application/json"], body: Array(#"{"currentAlbumIndex": 4}"#.utf8))
        #expect(saved.status == 200)
        let deleted = try RawHTTPClient.request(port: port, method: "DELETE", path: "/albums/at/4")
        #expect(deleted.status == 200)
        #expect(try deleted.json()["title"] as? String == "American Pie")
        #expect(try titles(port) == Array(Self.seedTitles.prefix(4)))
        // the state is clamped to the new last album, as reloadScroller did
        #expect(try RawHTTPClient.request(port: port, path: "/state").json()["currentAlbumIndex"] as? Int == 3)

        // Undo brings it back at its index
        let undoStatus = try RawHTTPClient.request(port: port, path: "/undo").json()
        #expect(undoStatus["depth"] as? Int == 1)
        #expect((undoStatus["next"] as? String)?.contains("American Pie") == true)
        let undo = try RawHTTPClient.request(port: port, method: "POST", path: "/undo")
        #expect(undo.status == 200)
        #expect(try titles(port) == Self.seedTitles)
        #expect(try RawHTTPClient.request(port: port, method: "POST", path: "/undo").status == 409)

        // Add at index 1
        let created = try RawHTTPClient.request(
            port: port, method: "POST", path: "/albums", headers: ["Content-Type": "application/json"],
            body: Array(#"{"title": "Hunky Dory", "artist": "David Bowie", "year": "1971", "index": 1}"#.utf8))
        #expect(created.status == 201)
        let location = try #require(created.header("Location"))
        #expect(location.hasPrefix("http://127.0.0.1:\(port)/albums/"))
        let newAlbum = try created.json()
        #expect(newAlbum["index"] as? Int == 1)
        #expect(newAlbum["year"] as? Int == 1971)
        #expect(newAlbum["genre"] as? String == "Pop")

        // Restart on the same data directory: everything is still there
        server?.signal(SIGTERM)
        #expect(server?.waitForExit(timeout: 10) == 0)
        server = nil
        let restarted = try ServerProcess(dataDirectory: data)
        var expected = Self.seedTitles
        expected.insert("Hunky Dory", at: 1)
        #expect(try titles(restarted.port) == expected)
        let id = try #require(newAlbum["id"] as? String)
        let fetched = try RawHTTPClient.request(port: restarted.port, path: "/albums/\(id)")
        #expect(fetched.status == 200)
        #expect(try fetched.json()["title"] as? String == "Hunky Dory")
        #expect(try RawHTTPClient.request(port: restarted.port, path: "/undo").json()["depth"] as? Int == 1,
                "the undo stack survives the restart")
    }

    @Test func acknowledgedWritesSurviveSIGKILL() throws {
        let data = TestApp.temporaryDirectory()
        let server = try ServerProcess(arguments: ["--no-seed"], dataDirectory: data)
        // Given N acknowledged creates
        var ids: [String] = []
        for n in 0..<40 {
            let response = try RawHTTPClient.request(
                port: server.port, method: "POST", path: "/albums", headers: ["Content-Type": "application/json"],
                body: Array(#"{"title": "Album \#(n)", "artist": "Artist \#(n)"}"#.utf8))
            #expect(response.status == 201)
            ids.append(try #require(response.json()["id"] as? String))
        }
        // When the process is killed without warning
        server.signal(SIGKILL)
        _ = server.waitForExit(timeout: 10)
        // Then a restart on the same data has every one of them, in order
        let restarted = try ServerProcess(arguments: ["--no-seed"], dataDirectory: data)
        let page = try RawHTTPClient.request(port: restarted.port, path: "/albums?limit=500").json()
        let items = try #require(page["items"] as? [[String: Any]])
        #expect(items.compactMap { $0["id"] as? String } == ids)
    }

    @Test func tutorialRemoteCallsWork() throws {
        let server = try ServerProcess(dataDirectory: TestApp.temporaryDirectory())
        let added = try RawHTTPClient.request(
            port: server.port, method: "POST", path: "/api/addAlbum", headers: ["Content-Type": "application/json"],
            body: Array(#"{"title": "Low", "artist": "David Bowie", "year": 1977, "index": 0}"#.utf8))
        #expect(added.status == 201)
        #expect(try titles(server.port).first == "Low")
        // The app posted the bare index as the body
        let removed = try RawHTTPClient.request(port: server.port, method: "POST", path: "/api/deleteAlbum",
                                                headers: ["Content-Type": "text/plain"], body: Array("0".utf8))
        #expect(removed.status == 200)
        #expect(try removed.json()["title"] as? String == "Low")
        let removedJSON = try RawHTTPClient.request(port: server.port, method: "POST", path: "/api/deleteAlbum",
                                                    headers: ["Content-Type": "application/json"], body: Array(#"{"index": 4}"#.utf8))
        #expect(try removedJSON.json()["title"] as? String == "American Pie")
        #expect(try titles(server.port) == Array(Self.seedTitles.prefix(4)))
    }
}
