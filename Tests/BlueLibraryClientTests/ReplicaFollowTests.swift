import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryClient
@testable import BlueLibraryServer

/// `LibraryReplica.follow()` against the real app on a socket: another client's edits reach the
/// replica through the event stream without polling, a dropped stream (server restart on the
/// same data and port) is caught up after the reconnect, `setOnline(false)` and a 401 stop it,
/// and `AlbumListModel(replica:reloadsOnUpdates:)` shows the change.
@Suite(.serialized, .timeLimit(.minutes(1)), .ownThreads) final class ReplicaFollowTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "bluelibrary-follow")
    }

    func replicaMatches(_ replica: LibraryReplica, _ client: BlueLibraryClient) async throws -> Bool {
        let remote = try await client.list(AlbumPageQuery(limit: 500)).items
        return plainAlbums(try await replica.albums()) == plainAlbums(remote)
    }

    /// `GET /changes` requests the server answered so far (its metrics).
    func changesRequests(port: Int) throws -> Int {
        let metrics = try RawHTTPClient.request(port: port, path: "/metrics").text
        return metrics.split(separator: "\n")
            .filter { $0.hasPrefix("bluelibrary_http_requests_total{") && $0.contains("changes\"") && $0.contains("method=\"GET\"") }
            .compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }
            .reduce(0, +)
    }

    @Test func theParserFollowsTheEventStreamRules() {
        var parser = ServerSentEventParser()
        var events = parser.feed(Array("\u{FEFF}: heartbeat\r\nid: 7\r\nevent: album.added\r\ndata: {\"a\":1}\r\n\r".utf8))
        #expect(events == [ServerSentEvent(event: "album.added", data: #"{"a":1}"#, id: "7")])
        // The LF of that CRLF comes in the next chunk; then two data lines, no type, no space.
        events = parser.feed(Array("\ndata:x\ndata:  y\n\nretry: 250\nid\n: c\nevent: ignored\n\ndata\n\n".utf8))
        #expect(events == [ServerSentEvent(data: "x\n y", id: "7"), ServerSentEvent(data: "", id: "")])
        #expect(parser.retry == 250 && parser.comments == 2)
        // A line split across chunks, CR alone as the line end.
        #expect(parser.feed(Array("id: 9\revent: album.del".utf8)).isEmpty)
        #expect(parser.feed(Array("eted\rdata: {}\r\r".utf8)) == [ServerSentEvent(event: "album.deleted", data: "{}", id: "9")])
    }

    @Test func theEventStreamArrivesAsItHappensOverURLSession() async throws {
        let server = try LiveServer()
        let version = try await server.client.list().version
        var events = server.client.events(lastEventID: String(version)).makeAsyncIterator()
        let added = try await server.client.add(AlbumInput(title: "Live", artist: "Stream"))
        // The response never ends: this event can only come from a body read as it arrives.
        let event = try #require(try await events.next())
        #expect(event.event == "album.added" && event.id == String(version + 1) && event.data.contains(added.id))
    }

    @Test func aSilentEventStreamFailsAfterItsIdleTimeout() async throws {
        let server = try LiveServer()
        let silent = try GatedProxy(upstreamPort: server.port)
        silent.gated = true  // holds the request: not even the head of the answer comes
        let stream = LiveServer.client(port: silent.port, timeout: 10).events(in: "default", lastEventID: nil, idleTimeout: 0.5)
        let error = await #expect(throws: BlueLibraryClientError.self) { for try await _ in stream {} }
        #expect(error == .timeout(seconds: 0.5))
        #expect(await silent.hangUpsArrive(1))  // the connection was closed at the deadline
        silent.close()
    }

    @Test func anotherClientsEditsReachAFollowingReplicaWithoutPolling() async throws {
        let server = try LiveServer()
        let other = server.client
        let replica = try LibraryReplica(path: directory.file("a.sqlite"), client: server.client)
        try await replica.sync()
        let following = Task { try await replica.follow() }
        defer { following.cancel() }
        #expect(await eventually(timeout: .seconds(5)) { await replica.isFollowing })

        let added = try await other.add(AlbumInput(title: "Blue Train", artist: "John Coltrane"), at: 1)
        #expect(try await eventually(timeout: .seconds(5)) { try await self.replicaMatches(replica, other) })
        _ = try await other.update(id: added.id, AlbumPatchInput(year: 1958))
        _ = try await other.move(id: added.id, to: 4)
        let first = try await other.album(at: 0)
        _ = try await other.delete(id: first.id)
        #expect(try await eventually(timeout: .seconds(5)) { try await self.replicaMatches(replica, other) })
        #expect(try await replica.albums().first { $0.id == added.id }?.year == 1958)

        // Nothing changes now: no `/changes` request goes out (no polling).
        // A poll would show within 600 ms: watching for one ends at once if it comes.
        let before = try changesRequests(port: server.port)
        let polled = try await eventually(timeout: .milliseconds(600), pollingEvery: .milliseconds(50)) {
            try changesRequests(port: server.port) != before
        }
        #expect(!polled)
        #expect(before <= 6, "a pull per change at most (the first sync's included): \(before)")

        // A burst (one batch: 20 events at once) is coalesced: events the pull already
        // covered start none of their own.
        _ = try await other.batch((1...20).map { .add(AlbumInput(title: "Burst \($0)", artist: "Many")) })
        #expect(try await eventually(timeout: .seconds(5)) { try await self.replicaMatches(replica, other) })
        let afterBurst = try changesRequests(port: server.port)
        #expect(afterBurst - before <= 2, "\(afterBurst - before) pulls for one burst")

        // The app's own sync while following is not refused.
        try await replica.add(AlbumInput(title: "Mine", artist: "Local"))
        try await replica.sync()
        #expect(try await replicaMatches(replica, other))

        // setOnline(false) stops following with `.offline`.
        await replica.setOnline(false)
        await #expect(throws: ReplicaError.offline) { try await following.value }
        #expect(await !replica.isFollowing)
    }

    @Test func aDroppedStreamIsCaughtUpAfterTheReconnect() async throws {
        let data = TestApp.temporaryDirectory()
        let first = try TestApp.make { $0.dataDirectory = data }
        first.start()
        let port = first.port
        let other = LiveServer.client(port: port, timeout: 5)
        let replica = try LibraryReplica(path: directory.file("b.sqlite"), client: LiveServer.client(port: port, timeout: 5))
        await replica.configure(maxAttempts: 2, retryDelay: .milliseconds(20), followRetryDelay: .milliseconds(50),
                                followMaxRetryDelay: .milliseconds(200))
        try await replica.sync()
        let following = Task { try await replica.follow() }
        defer { following.cancel() }
        _ = try await other.add(AlbumInput(title: "Before", artist: "Restart"))
        #expect(try await eventually(timeout: .seconds(5)) { try await self.replicaMatches(replica, other) })

        first.shutdown()
        first.waitUntilStopped()
        let again = try TestApp.make { $0.dataDirectory = data; $0.port = port }
        again.start()
        defer { again.shutdown() }
        // Made while the replica's stream is down or reconnecting: it must arrive either way.
        _ = try await other.add(AlbumInput(title: "While", artist: "Down"), at: 0)
        #expect(try await eventually(timeout: .seconds(5)) { try await self.replicaMatches(replica, other) })
        // The replica listens to the new server again, and hears the next change there.
        #expect(await eventually(timeout: .seconds(5)) { again.eventHubs.all.reduce(0) { $0 + $1.subscriberCount } == 1 })
        _ = try await other.add(AlbumInput(title: "After", artist: "Reconnect"))
        #expect(try await eventually(timeout: .seconds(5)) { try await self.replicaMatches(replica, other) })
        let (isFollowing, isOnline) = (await replica.isFollowing, await replica.isOnline)
        #expect(isFollowing && isOnline)
    }

    @Test func a401StopsFollowingWithTheError() async throws {
        let server = try LiveServer(.locked)
        let replica = try LibraryReplica(path: directory.file("c.sqlite"), client: LiveServer.client(port: server.port))
        await #expect {
            try await replica.follow()
        } throws: { error in
            guard case let .client(client) = error as? ReplicaError, case .unauthorized = client else { return false }
            return true
        }
        #expect(await !replica.isFollowing)
    }

    @Test func aModelOnAFollowingReplicaShowsAnotherClientsChange() async throws {
        let server = try LiveServer()
        let replica = try LibraryReplica(path: directory.file("d.sqlite"), client: server.client)
        try await replica.sync()
        let model = AlbumListModel(replica: replica, reloadsOnUpdates: true)
        try await model.loadAndWait()
        let following = Task { try await replica.follow() }
        defer { following.cancel() }

        let added = try await server.client.add(AlbumInput(title: "Somethin' Else", artist: "Cannonball Adderley"), at: 0)
        #expect(await eventually(timeout: .seconds(5)) { model.items.first?.id == added.id })
        #expect(model.items.count == 6 && !model.isOutdated)
    }
}
