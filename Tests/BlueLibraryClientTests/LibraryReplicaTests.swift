import Foundation
import BlueLibraryTestSupport
import HTTPTestSupport
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryClient

/// `LibraryReplica` against the real app on a socket (seeded with the tutorial's five albums):
/// offline edits, another client editing meanwhile, an unreachable server, a retried add, and a
/// replica too far behind (410). After each sync, replica and server hold the same albums in
/// the same order with the same fields.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class LibraryReplicaTests {
    let server: LiveServer
    let directory: TemporaryDirectory
    var client: BlueLibraryClient { server.client }

    init() throws {
        server = try LiveServer()
        directory = try TemporaryDirectory(prefix: "bluelibrary-replica")
    }

    func replica(_ name: String = "replica.sqlite", client: BlueLibraryClient? = nil) throws -> LibraryReplica {
        try LibraryReplica(path: directory.file(name), client: client ?? self.client)
    }


    func expectIdentical(_ replica: LibraryReplica, on server: LiveServer? = nil, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        let local = try await replica.albums()
        let remote = try await (server ?? self.server).albums()
        #expect(plainAlbums(local) == plainAlbums(remote), sourceLocation: sourceLocation)
        #expect(local.map(\.index) == Array(0..<local.count).map { Optional($0) }, sourceLocation: sourceLocation)
        #expect(try await replica.hasPendingChanges() == false, sourceLocation: sourceLocation)
    }

    @Test(arguments: ServerLock.allCases) func firstSyncLoadsTheLibraryAndASecondChangesNothing(lock: ServerLock) async throws {
        let server = try self.server.with(lock), client = server.client
        let replica = try replica(client: client)
        #expect(try await replica.albums().isEmpty)
        let first = try await replica.sync()
        #expect(first.reloaded && first.pushed == 0 && first.dropped.isEmpty)
        #expect(try await replica.albums().count == 5)
        try await expectIdentical(replica, on: server)
        let second = try await replica.sync()
        #expect(!second.reloaded && second.pulledChanges == 0 && second.version == first.version)
        try await expectIdentical(replica, on: server)
    }

    /// A search on the replica finds what the server finds: the same words rule and folding.
    @Test func aSearchOnTheReplicaFindsWhatTheServerFinds() async throws {
        let replica = try replica()
        _ = try await replica.sync()
        _ = try await replica.add(AlbumInput(title: "Homogenic", artist: "Björk", genre: "Electronic"), at: 0)
        _ = try await replica.sync()
        for q in ["sun", "SUN the", "madonna pie", "david b", "bjork", "BJÖRK homo", "electronic", "pop sun", "un", "--"] {
            let query = AlbumPageQuery(limit: 50, q: q)
            let local = try await replica.page(query).items.map(\.title)
            let remote: [String]
            do {
                remote = try await client.list(query).items.map(\.title)
            } catch {
                remote = []  // "--" has no word: the server refuses it, the replica finds nothing
                #expect(q == "--", "q=\(q): \(error)")
            }
            #expect(local == remote, "q=\(q)")
        }
        #expect(try await replica.page(AlbumPageQuery(q: "bjork")).items.map(\.title) == ["Homogenic"])
    }

    @Test(arguments: ServerLock.allCases, [50, 0]) func offlineEditsAndAnotherClientsEditsSyncToIdenticalLists(lock: ServerLock, staleFetchLimit: Int) async throws {
        let server = try self.server.with(lock), client = server.client
        // 0: the fields of added and edited albums come from a walk through the list, not one GET each.
        let replica = try replica(client: client)
        await replica.configure(staleFetchLimit: staleFetchLimit)
        try await replica.sync()
        let seeded = try await replica.albums()

        await replica.setOnline(false)
        #expect(await replica.isOnline == false)
        await #expect(throws: ReplicaError.offline) { try await replica.sync() }

        // Offline edits: the app sees each at once.
        let first = try await replica.add(AlbumInput(title: "Offline First", artist: "Local", year: 2001), at: 0)
        #expect(first.index == 0 && first.id.hasPrefix("local-"))
        let middle = try await replica.add(AlbumInput(title: "Offline Middle", artist: "Local", genre: "Jazz"), at: 3)
        try await replica.add(AlbumInput(title: "Offline Last", artist: "Local"))
        try await replica.delete(id: seeded[1].id)
        try await replica.move(id: seeded[4].id, to: 0)
        try await replica.update(id: seeded[2].id, AlbumPatchInput(title: "Renamed Offline"))
        try await replica.update(id: middle.id, AlbumPatchInput(year: 1999))
        try await replica.delete(id: seeded[3].id)  // the other client deletes it too: a no-op
        try await replica.update(id: seeded[0].id, AlbumPatchInput(genre: "Rock"))  // deleted by the other client: dropped
        let shown = try await replica.albums()
        #expect(shown.map(\.title).prefix(2) == [seeded[4].title, "Offline First"])
        #expect(shown.first { $0.id == middle.id }?.year == 1999)
        #expect(shown.first { $0.id == seeded[2].id }?.title == "Renamed Offline")
        #expect(try await replica.pending().map(\.kind) == ["add", "add", "add", "delete", "move", "update", "update", "delete", "update"])

        // Meanwhile another client edits the server.
        _ = try await client.add(AlbumInput(title: "Server Side", artist: "Other"), at: 2)
        _ = try await client.delete(id: seeded[3].id)
        _ = try await client.delete(id: seeded[0].id)
        _ = try await client.update(id: seeded[2].id, AlbumPatchInput(artist: "Edited Elsewhere"))
        _ = try await client.move(id: seeded[2].id, to: 0)

        await replica.setOnline(true)
        let report = try await replica.sync()
        #expect(report.pushed == 8)
        #expect(report.dropped.map(\.operation) == [.update(id: seeded[0].id, patch: AlbumPatchInput(genre: "Rock"))])
        #expect(report.dropped.first?.reason.contains("deleted on the server") == true)
        try await expectIdentical(replica, on: server)

        let albums = try await replica.albums()
        #expect(!albums.contains { $0.id.hasPrefix("local-") })
        #expect(albums.count == 6)  // 5 seeded, 3 added here, 1 there, 3 deleted
        // Different fields edited on both sides both survive; the added album kept its patch.
        let edited = try #require(albums.first { $0.id == seeded[2].id })
        #expect(edited.title == "Renamed Offline" && edited.artist == "Edited Elsewhere")
        #expect(albums.first { $0.title == "Offline Middle" }?.year == 1999)
        #expect(albums.first { $0.title == "Offline Middle" }?.genre == "Jazz")

        // A fresh replica of the same server loads the same list.
        let other = try self.replica("other.sqlite", client: client)
        try await other.sync()
        #expect(plainAlbums(try await other.albums()) == plainAlbums(albums))
    }

    @Test(arguments: ServerLock.allCases) func conflictsAreDecidedPerOperationKind(lock: ServerLock) async throws {
        let server = try self.server.with(lock), client = server.client
        let replica = try replica(client: client)
        try await replica.sync()
        let seeded = try await replica.albums()
        await replica.setOnline(false)

        let rejected = try await replica.add(AlbumInput(title: " ", artist: "Nobody"), at: 0)  // the server refuses it (422)
        try await replica.update(id: rejected.id, AlbumPatchInput(year: 2000))
        try await replica.move(id: seeded[0].id, to: 4)  // past the server's end by then: the last index
        try await replica.move(id: rejected.id, to: 2)
        try await replica.move(id: seeded[1].id, to: 0)  // deleted on the server: dropped
        try await replica.delete(id: seeded[2].id)  // deleted on the server too: a no-op
        #expect(try await replica.albums().count == 5)

        for album in seeded[1...3] { _ = try await client.delete(id: album.id) }

        await replica.setOnline(true)
        let report = try await replica.sync()
        #expect(report.pushed == 2)
        #expect(report.dropped.map(\.operation.kind) == ["add", "update", "move", "move"])
        #expect(report.dropped.map(\.operation.albumID) == [rejected.id, rejected.id, rejected.id, seeded[1].id])
        #expect(report.dropped[0].reason.contains("title"))
        #expect(report.dropped[1].reason.contains("add was dropped"))
        #expect(report.dropped[3].reason.contains("deleted on the server"))
        try await expectIdentical(replica, on: server)
        #expect(try await replica.albums().map(\.id) == [seeded[4].id, seeded[0].id])
    }

    @Test func anUnreachableServerKeepsEditsQueuedAcrossAReopen() async throws {
        let deadPort = try NginxProxy.freePort()  // nothing listens there
        let path = "unreachable.sqlite"
        do {
            let replica = try replica(path, client: LiveServer.client(port: deadPort, timeout: 2))
            await replica.configure(maxAttempts: 2, retryDelay: .milliseconds(1))
            let heard = Mutex<[Bool]>([])
            await replica.addOnlineListener { online in heard.withLock { $0.append(online) } }
            let failure = await #expect(throws: ReplicaError.self) { try await replica.sync() }
            guard case .client(.transport)? = failure else {
                Issue.record("expected a transport failure, got \(String(describing: failure))")
                return
            }
            #expect(await replica.isOnline == false)
            #expect(heard.withLock { $0 } == [false])
            try await replica.add(AlbumInput(title: "Queued While Down", artist: "Local"))
            try await replica.add(AlbumInput(title: "Queued First", artist: "Local"), at: 0)
            #expect(try await replica.albums().map(\.title) == ["Queued First", "Queued While Down"])
        }
        // The app restarts with the server reachable: the same file, a working client.
        let reopened = try replica(path)
        #expect(try await reopened.pending().count == 2)
        let report = try await reopened.sync()
        #expect(report.pushed == 2 && report.reloaded)
        try await expectIdentical(reopened)
        let titles = try await server.albums().map(\.title)
        #expect(titles.first == "Queued First" && titles.last == "Queued While Down" && titles.count == 7)
    }

    @Test func aServerRestartedMeanwhileIsCaughtUpThroughTheChangeFeed() async throws {
        let data = TestApp.temporaryDirectory()
        let first = try TestApp.make { $0.dataDirectory = data }
        first.start()
        let path = "restart.sqlite"
        let seeded: [AlbumResource]
        do {
            let replica = try replica(path, client: LiveServer.client(port: first.port, timeout: 2))
            await replica.configure(maxAttempts: 2, retryDelay: .milliseconds(1))
            try await replica.sync()
            seeded = try await replica.albums()
            first.shutdown()  // the server goes away; the app keeps working on its replica
            try await replica.add(AlbumInput(title: "While It Was Down", artist: "Local"), at: 1)
            try await replica.move(id: seeded[0].id, to: 4)
            try await replica.update(id: seeded[3].id, AlbumPatchInput(year: 1970))
        try await replica.update(id: seeded[2].id, AlbumPatchInput(genre: "Rock", clearing: [.coverUrl, .year]))
        #expect(try await replica.albums().first { $0.id == seeded[2].id }.map { [$0.genre, "\($0.year as Any)", "\($0.coverUrl as Any)"] }
            == ["Rock", "nil", "nil"])
            await #expect(throws: ReplicaError.self) { try await replica.sync() }
            #expect(await replica.isOnline == false)
        }

        let second = try TestApp.make { $0.dataDirectory = data }
        second.start()
        defer { second.shutdown() }
        let other = LiveServer.client(port: second.port)
        _ = try await other.add(AlbumInput(title: "After The Restart", artist: "Other"), at: 0)
        _ = try await other.delete(id: seeded[4].id)

        let replica = try replica(path, client: other)
        let report = try await replica.sync()
        #expect(report.pushed == 4 && report.dropped.isEmpty && !report.reloaded)
        var query = AlbumPageQuery(limit: 500)
        var remote: [AlbumResource] = []
        while true {
            let page = try await other.list(query)
            remote += page.items
            guard let next = page.next else { break }
            query = query.continuing(at: next)
        }
        #expect(plainAlbums(try await replica.albums()) == plainAlbums(remote))
        // Indexes are replayed as they were given, on the server's list as it is when they arrive.
        #expect(remote.map(\.id) == [remote[0].id, remote[1].id, seeded[1].id, seeded[2].id, seeded[0].id, seeded[3].id])
        #expect(remote.map(\.title).prefix(2) == ["After The Restart", "While It Was Down"])
        #expect(remote.first { $0.id == seeded[3].id }?.year == 1970)
        let cleared = try #require(remote.first { $0.id == seeded[2].id })
        #expect(cleared.genre == "Rock" && cleared.year == nil && cleared.coverUrl == nil)
        #expect(seeded[2].year != nil && seeded[2].coverUrl != nil)
    }

    @Test func oneSyncAtATimeWhileLocalEditsGoOn() async throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        defer { proxy.close() }
        let replica = try replica(client: LiveServer.client(port: proxy.port))
        try await replica.sync()
        let seen = proxy.requests.count
        try await replica.add(AlbumInput(title: "Held At The Gate", artist: "Local"))
        let key = try #require(try await replica.idempotencyKeys().first)

        proxy.gated = true
        let running = Task { try await replica.sync() }
        #expect(await proxy.requestsArrive(seen + 1))
        let held = proxy.requests[seen]
        #expect(held.method == "POST" && held.headers["idempotency-key"] == key)
        await #expect(throws: ReplicaError.busy) { try await replica.sync() }
        await #expect(throws: ReplicaError.busy) { try await replica.push() }
        try await replica.add(AlbumInput(title: "Made During The Sync", artist: "Local"), at: 0)

        proxy.gated = false
        let report = try await running.value
        #expect(report.pushed >= 1)
        try await replica.sync()  // the edit made during the first sync
        try await expectIdentical(replica)
        #expect(try await server.albums().map(\.title).filter { $0.hasSuffix("Sync") || $0.hasSuffix("Gate") }
            == ["Made During The Sync", "Held At The Gate"])
    }

    @Test func anAddRetriedAfterTheServerAppliedItIsAppliedOnce() async throws {
        let replica = try replica()
        try await replica.sync()
        let input = AlbumInput(title: "Sent Twice", artist: "Retry")
        try await replica.add(input, at: 1)
        // The first send reached the server and applied, but its answer was lost: the server
        // holds the add under the entry's key, the outbox still holds the entry.
        let key = try #require(try await replica.idempotencyKeys().first)
        _ = try await client.add(input, at: 1, idempotencyKey: key)
        #expect(try await server.albums().count == 6)

        let report = try await replica.sync()
        #expect(report.pushed == 1 && report.dropped.isEmpty)
        let titles = try await server.albums().map(\.title)
        #expect(titles.filter { $0 == "Sent Twice" }.count == 1 && titles[1] == "Sent Twice")
        try await expectIdentical(replica)
    }

    @Test func aBatchWhoseAnswerWasLostIsRetriedAndAppliesOnce() async throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        defer { proxy.close() }
        // A lost answer shows as the client's timeout (FoundationNetworking does not report the
        // closed connection sooner), so a short one keeps the test short.
        let replica = try replica(client: LiveServer.client(port: proxy.port, timeout: 2))
        await replica.configure(retryDelay: .milliseconds(1))
        try await replica.sync()
        let seeded = try await replica.albums()
        try await replica.add(AlbumInput(title: "Answer Lost", artist: "Retry"), at: 2)
        try await replica.delete(id: seeded[1].id)
        try await replica.move(id: seeded[0].id, to: 3)
        try await replica.update(id: seeded[2].id, AlbumPatchInput(title: "Patched Twice"))
        let before = proxy.requests.count
        proxy.dropAnswers(to: "POST")

        let report = try await replica.sync()
        #expect(proxy.droppedAnswers == 1)
        #expect(report.pushed == 4 && report.dropped.isEmpty)
        // The four went as one batch, sent again under the same key (more than once only if a
        // retry itself timed out on a slow machine), and applied once.
        let batches = proxy.requests[before...].filter { $0.method == "POST" && $0.target.hasSuffix("/batch") }
        #expect(batches.count >= 2 && Set(batches.map { $0.headers["idempotency-key"] }).count == 1)
        try await expectIdentical(replica)
        let titles = try await server.albums().map(\.title)
        #expect(titles.filter { $0 == "Answer Lost" }.count == 1 && titles.count == 5)
        #expect(try await replica.albums().map(\.id)[3] == seeded[0].id)
    }

    @Test func aReplicaTooFarBehindGets410AndReloads() async throws {
        let server = try LiveServer.keepingTwoChanges()
        let replica = try LibraryReplica(path: directory.file("behind.sqlite"), client: server.client)
        try await replica.sync()
        let before = try await replica.version()
        for index in 0..<6 { _ = try await server.client.add(AlbumInput(title: "Later \(index)", artist: "Other"), at: index) }
        let gone = await #expect(throws: BlueLibraryClientError.self) { try await server.client.changes(since: before) }
        #expect(gone?.status == 410)

        let report = try await replica.sync()
        #expect(report.reloaded && report.version == before + 6)
        let local = try await replica.albums()
        let remote = try await server.albums()
        #expect(plainAlbums(local) == plainAlbums(remote) && local.count == 11)
    }

    @Test func anArchiveImportOnTheServerIsAReplacedChangeThatReloads() async throws {
        let replica = try replica()
        try await replica.sync()
        try await replica.add(AlbumInput(title: "Queued Before The Import", artist: "Local"))

        // Another library's archive, imported over this one: the feed says `replaced`.
        let donor = try LiveServer()
        _ = try await donor.client.add(AlbumInput(title: "From The Archive", artist: "Donor"), at: 0)
        let archive = try RawHTTPClient.request(port: donor.port, path: "/archive")
        #expect(archive.status == 200)
        let imported = try RawHTTPClient.request(port: server.port, method: "PUT", path: "/archive",
                                                 headers: ["Content-Type": "application/json"], body: archive.body)
        #expect(imported.status == 200, "\(String(decoding: imported.body, as: UTF8.self))")
        let feed = try await client.changes(since: try await replica.version())
        #expect(feed.changes.map(\.kind).contains("replaced"))

        let report = try await replica.sync()
        #expect(report.reloaded && report.pushed == 1)
        try await expectIdentical(replica)
        let titles = try await replica.albums().map(\.title)
        #expect(titles.first == "From The Archive" && titles.last == "Queued Before The Import" && titles.count == 7)
    }

    @Test func aFileOfAnotherLibraryIsRefused() async throws {
        _ = try await client.createLibrary(id: "jazz")
        let jazz = try LibraryReplica(path: directory.file("jazz.sqlite"), client: client, library: "jazz")
        try await jazz.sync()
        #expect(try await jazz.albums().isEmpty)
        #expect(throws: ReplicaError.wrongLibrary(file: directory.file("jazz.sqlite"), holds: "jazz", asked: "default")) {
            _ = try LibraryReplica(path: self.directory.file("jazz.sqlite"), client: self.client)
        }
    }
}
