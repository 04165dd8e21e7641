import BlueLibraryTestSupport
import Dispatch
import Foundation
import HTTPTestSupport
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Moves between libraries racing each other over real sockets: every album stays in exactly
/// one library, the cached pages agree with the data, and each library's change feed replays
/// (with `movedTo`/`movedFrom`) to exactly its list.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) final class LibraryMoveConcurrencyTests {
    typealias Routes = LibraryRouteTests

    /// Applies a library's change feed since `since` to `ids` (its list at `since`).
    static func replay(_ changes: [[String: Any]], onto ids: [String]) throws -> [String] {
        var ids = ids
        for change in changes {
            let kind = try #require(change["kind"] as? String)
            let id = try #require(change["id"] as? String)
            let index = try #require(change["index"] as? Int)
            switch kind {
            case "added": ids.insert(id, at: index)
            case "deleted":
                #expect(ids[index] == id)
                ids.remove(at: index)
            case "moved":
                let from = try #require(change["from"] as? Int)
                #expect(ids[from] == id)
                ids.remove(at: from)
                ids.insert(id, at: index)
            default: #expect(ids[index] == id)
            }
        }
        return ids
    }

    static func changes(_ port: Int, _ prefix: String, since: Int) throws -> [[String: Any]] {
        let page = try Routes.request(port, "GET", "\(prefix)/changes?since=\(since)&limit=1000").json()
        #expect(page["more"] as? Bool == false)
        return page["changes"] as? [[String: Any]] ?? []
    }

    @Test func racingMovesBothWaysKeepEveryAlbumInOneLibraryAndTheFeedsExact() throws {
        let app = try TestApp.make { $0.workers = 4 }
        app.start()
        defer { app.shutdown() }
        let port = app.port
        try Routes.createLibrary(port, "jazz")
        for index in 0..<7 { _ = try Routes.add(port, "Jazz \(index)", in: "/libraries/jazz") }
        let startDefault = try Routes.ids(port)
        let startJazz = try Routes.ids(port, in: "/libraries/jazz")
        let versions = (try Routes.request(port, "GET", "/albums?limit=1").json()["version"] as? Int ?? -1,
                        try Routes.request(port, "GET", "/libraries/jazz/albums?limit=1").json()["version"] as? Int ?? -1)
        let everyone = Set(startDefault + startJazz)

        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            var random = SeededGenerator(seed: UInt64(13 + worker))
            for step in 0..<25 {
                let id = everyone.randomElement(using: &random)!
                let (from, to) = Bool.random(using: &random) ? ("default", "jazz") : ("jazz", "default")
                let index = Int.random(in: 0...12, using: &random)
                do {
                    let response = try Routes.request(
                        port, "POST", "/libraries/\(from)/albums/\(id)/move", json: #"{"library": "\#(to)", "index": \#(index)}"#)
                    // 404: the album is in the other library right now (another worker moved it).
                    if response.status != 200 && response.status != 404 {
                        failures.withLock { $0.append("worker \(worker) step \(step): \(response.status) \(response.text)") }
                    }
                    // Reads in between go through the caches.
                    _ = try Routes.request(port, "GET", "/libraries/\(to)/albums?limit=5")
                } catch {
                    failures.withLock { $0.append("worker \(worker) step \(step): \(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])

        let endDefault = try Routes.ids(port)
        let endJazz = try Routes.ids(port, in: "/libraries/jazz")
        #expect(endDefault.count + endJazz.count == everyone.count)
        #expect(Set(endDefault + endJazz) == everyone)
        #expect(try Self.replay(try Self.changes(port, "", since: versions.0), onto: startDefault) == endDefault)
        #expect(try Self.replay(try Self.changes(port, "/libraries/jazz", since: versions.1), onto: startJazz) == endJazz)
        // Each arrival names where it came from, each departure where it went.
        let jazzChanges = try Self.changes(port, "/libraries/jazz", since: versions.1)
        #expect(jazzChanges.count >= 20, "most of the 100 moves find their album")
        for change in jazzChanges {
            switch change["kind"] as? String {
            case "added": #expect(change["movedFrom"] as? String == "default")
            case "deleted": #expect(change["movedTo"] as? String == "default")
            default: Issue.record("unexpected change \(change)")
            }
        }
        // The catalog agrees.
        let records = try #require(try Routes.request(port, "GET", "/libraries").json()["libraries"] as? [[String: Any]])
        #expect(records.map { $0["albumCount"] as? Int } == [endDefault.count, endJazz.count])
    }
}
