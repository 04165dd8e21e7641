import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Event streams of several libraries over real sockets: one stream per library, and one
/// stream over several (`/events?library=a&library=b`) with version-vector ids.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) final class LibraryEventTests {
    typealias Routes = LibraryRouteTests

    @Test func eachLibraryHasItsOwnStreamAndAMoveIsSeenInBoth() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let port = app.port
        try Routes.createLibrary(port, "jazz")
        let jazz = try SSEClient(port: port, path: "/libraries/jazz/events")
        #expect(jazz.head.status == 200 && jazz.head.header("Content-Type") == "text/event-stream")
        let plain = try SSEClient(port: port)

        let first = try Routes.add(port, "Kind of Blue", in: "/libraries/jazz")
        let added = try jazz.next(2)
        #expect(added.map(\.name) == ["album.added", "state.changed"])
        #expect(added[0].id == "1" && added[0].json["id"] as? String == first && added[0].json["library"] == nil)

        // A move from default to jazz: deleted with movedTo in default, added with movedFrom in jazz.
        let moving = try #require(try Routes.ids(port).first)
        #expect(try Routes.request(port, "POST", "/albums/\(moving)/move", json: #"{"library": "jazz", "index": 0}"#).status == 200)
        let left = try #require(try plain.next())
        #expect(left.name == "album.deleted" && left.id == "2")
        #expect(left.json["id"] as? String == moving && left.json["index"] as? Int == 0 && left.json["movedTo"] as? String == "jazz")
        let arrived = try #require(try jazz.next())
        #expect(arrived.name == "album.added" && arrived.id == "2")
        #expect(arrived.json["id"] as? String == moving && arrived.json["index"] as? Int == 0 && arrived.json["movedFrom"] as? String == "default")

        // Resuming a library's stream replays its own events only.
        let resumed = try SSEClient(port: port, lastEventID: "1", path: "/libraries/jazz/events")
        #expect(try resumed.next().map(\.json["movedFrom"]) as? String == "default")

        try LibraryRouteTests.expectProblem(try Routes.request(port, "GET", "/libraries/nope/events"), 404, "library-not-found")
    }

    @Test func oneStreamOverTwoLibrariesSaysWhichAndResumesFromItsVector() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let port = app.port
        try Routes.createLibrary(port, "jazz")
        let stream = try SSEClient(port: port, query: "?library=default&library=jazz&library=default")
        #expect(stream.head.status == 200)

        let inJazz = try Routes.add(port, "Kind of Blue", in: "/libraries/jazz")
        let jazzAdded = try #require(try stream.next())
        #expect(jazzAdded.name == "album.added")
        #expect(jazzAdded.json["library"] as? String == "jazz" && jazzAdded.json["id"] as? String == inJazz)
        #expect(jazzAdded.id == "default:1,jazz:1")
        let jazzState = try #require(try stream.next())
        #expect(jazzState.name == "state.changed" && jazzState.json["library"] as? String == "jazz")

        let inDefault = try Routes.add(port, "Blue Train")
        let defaultAdded = try #require(try stream.next())
        #expect(defaultAdded.json["library"] as? String == "default" && defaultAdded.json["id"] as? String == inDefault)
        #expect(defaultAdded.id == "default:2,jazz:1")
        let resumeFrom = try #require(try stream.next()).id  // default's state.changed
        #expect(resumeFrom == "default:2,jazz:1")

        // Missed events of both libraries are replayed from the vector.
        let missedDefault = try Routes.add(port, "Giant Steps")
        let missedJazz = try Routes.add(port, "Mingus Ah Um", in: "/libraries/jazz")
        let resumed = try SSEClient(port: port, lastEventID: resumeFrom, query: "?library=default&library=jazz")
        let replayed = try resumed.next(4).filter { $0.name == "album.added" }
        #expect(replayed.map { $0.json["id"] as? String } == [missedDefault, missedJazz])
        #expect(replayed.map { $0.json["library"] as? String } == ["default", "jazz"])
        #expect(replayed.last?.id == "default:3,jazz:2")

        // A vector that does not name a library starts that one outdated (with its library).
        let partial = try SSEClient(port: port, lastEventID: "default:3", query: "?library=default&library=jazz")
        let outdated = try #require(try partial.next())
        #expect(outdated.name == "library.outdated" && outdated.json["library"] as? String == "jazz")
        #expect(outdated.json["version"] as? Int == 2 && outdated.id == "default:3,jazz:2")

        // Server-wide events pass through without a library.
        #expect(try Routes.request(port, "PATCH", "/settings", json: #"{"paging": {"defaultLimit": 7}}"#).status == 200)
        // (Each library's hub delivers on its own thread: jazz's two events may come after it.)
        let settings = try #require(try stream.next(5).first { $0.name == "settings.changed" })
        #expect(settings.json["library"] == nil)

        try LibraryRouteTests.expectProblem(try Routes.request(port, "GET", "/events?library=nope"), 422, field: "library")
        try LibraryRouteTests.expectProblem(try Routes.request(port, "GET", "/events?library=Bad!"), 400)
        try LibraryRouteTests.expectProblem(try Routes.request(port, "GET", "/libraries/jazz/events?library=default"), 400)
    }

    @Test func aStreamOverSeveralLibrariesGetsOneHeartbeatPerRoundAndOneShutdownEvent() throws {
        let app = try TestApp.make()  // heartbeats every 15 s: the test sends its own rounds
        app.start()
        try Routes.createLibrary(app.port, "jazz")
        try Routes.createLibrary(app.port, "rock")
        let stream = try SSEClient(port: app.port, query: "?library=jazz&library=rock&library=default")
        // One heartbeat round of every hub: only the first library's hub writes to the stream.
        let hubs = app.eventHubs.all
        #expect(hubs.count == 3)
        for hub in hubs { hub.sendHeartbeat() }
        _ = try Routes.add(app.port, "After the heartbeats", in: "/libraries/rock")
        #expect(try stream.nextChunk() == ": heartbeat\n\n")
        #expect(try stream.next()?.name == "album.added")
        #expect(stream.comments.isEmpty, "one heartbeat per round, not one per library: \(stream.comments)")

        app.shutdown()
        var names: [String] = []
        while let event = try stream.next() { names.append(event.name) }
        #expect(names == ["state.changed", "server.shutdown"])  // then the last chunk: a clean end
        app.waitUntilStopped()
    }

    @Test func afterARestartALibraryIsFoundAgainAndItsStreamResumesFromItsVersion() throws {
        let data = TestApp.temporaryDirectory()
        let first = try TestApp.make { $0.dataDirectory = data }
        first.start()
        try Routes.createLibrary(first.port, "jazz")
        let id = try Routes.add(first.port, "Kind of Blue", in: "/libraries/jazz")
        first.shutdown()
        first.waitUntilStopped()

        let app = try TestApp.make { $0.dataDirectory = data }
        app.start()
        defer { app.shutdown() }
        // Not in memory yet: the fast paths decline, the worker finds it in the store.
        #expect(try Routes.ids(app.port, in: "/libraries/jazz") == [id])
        let stream = try SSEClient(port: app.port, lastEventID: "1", path: "/libraries/jazz/events")
        #expect(stream.pending.isEmpty)  // version 1 is the library's version: nothing missed
        // Before this process: filled from the change feed, which still has version 1.
        let old = try SSEClient(port: app.port, lastEventID: "0", path: "/libraries/jazz/events")
        let missed = try #require(try old.next())
        #expect(missed.name == "album.added" && missed.id == "1" && missed.json["id"] as? String == id)
        _ = try Routes.add(app.port, "Blue Train", in: "/libraries/jazz")
        #expect(try stream.next().map(\.id) == "2")
    }

    @Test func aStreamOverSeveralLibrariesFillsAnOldVectorFromTheChangeFeeds() throws {
        let app = try TestApp.make { $0.events.replayCapacity = 2 }
        app.start()
        defer { app.shutdown() }
        let port = app.port
        try Routes.createLibrary(port, "jazz")
        var added: [String] = []
        for title in ["A", "B", "C"] { added.append(try Routes.add(port, title)) }  // default 2...4
        let inJazz = try Routes.add(port, "Kind of Blue", in: "/libraries/jazz")  // jazz 1
        // default keeps only 4's two events; 1 and what follows come from its feed.
        let resumed = try SSEClient(port: port, lastEventID: "default:1,jazz:0", query: "?library=default&library=jazz")
        let albums = try resumed.next(5).filter { $0.name == "album.added" }
        #expect(albums.map { $0.json["id"] as? String } == added + [inJazz])
        #expect(albums.map { $0.json["library"] as? String } == ["default", "default", "default", "jazz"])
        #expect(albums.last?.id == "default:4,jazz:1")
    }

    @Test func vectorIDsParseAndDataGainsTheLibrary() {
        #expect(MultiLibraryEventStream.parse("default:12,jazz:3") == [.default: 12, .init(rawValue: "jazz"): 3])
        #expect(MultiLibraryEventStream.parse(" a:1,b:x,c,:2 ") == [.init(rawValue: "a"): 1])
        #expect(MultiLibraryEventStream.withLibrary(#"{"id":"X","version":2}"#, .default) == #"{"library":"default","id":"X","version":2}"#)
        #expect(MultiLibraryEventStream.withLibrary("{}", .default) == #"{"library":"default"}"#)
    }
}
