import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryClient

/// `LibraryReplica(path:client:view:)` against the real app on a socket: a read-only copy of a
/// view over two libraries, reloaded when the view's ETag moved, refusing writes.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class ViewReplicaTests {
    let server: LiveServer
    let directory: TemporaryDirectory
    var client: BlueLibraryClient { server.client }

    init() throws {
        server = try LiveServer()
        directory = try TemporaryDirectory(prefix: "bluelibrary-view-replica")
    }

    /// The view "everything" over default (the five seed albums) and jazz (two albums).
    func given() async throws {
        _ = try await client.createLibrary(id: "jazz")
        _ = try await client.add(AlbumInput(title: "Kind of Blue", artist: "Miles Davis"), in: .library("jazz"))
        _ = try await client.add(AlbumInput(title: "Blue Train", artist: "John Coltrane"), in: .library("jazz"))
        _ = try await client.createView(ViewInput(id: "everything", sources: ["default", "jazz"]))
    }

    /// The view's list as the server pages it.
    func serverView() async throws -> [AlbumResource] {
        var query = AlbumPageQuery(limit: 3)
        var albums: [AlbumResource] = []
        while true {
            let page = try await client.list(query, in: .view("everything"))
            albums += page.items
            guard let next = page.next else { return albums }
            query = query.continuing(at: next)
        }
    }

    @Test func aChangeInASourceShowsAfterAPullAndWritesAreRefused() async throws {
        try await given()
        let replica = try LibraryReplica(path: directory.file("view.sqlite"), client: client, view: "everything")
        #expect(replica.view == "everything")
        // The first sync loads the view: every album of both sources, with its library
        let first = try await replica.sync()
        #expect(first.reloaded && first.pushed == 0)
        var local = try await replica.albums()
        var remote = try await serverView()
        #expect(local.count == 7 && local.map(\.id) == remote.map(\.id))
        #expect(local.compactMap(\.library) == Array(repeating: "default", count: 5) + ["jazz", "jazz"])
        #expect(plainAlbums(local) == plainAlbums(remote))
        // Nothing changed: the pull is one revalidation (304), no reload
        let again = try await replica.pull()
        #expect(!again.reloaded && again.version == first.version)
        // When another client changes a source library
        let added = try await client.add(AlbumInput(title: "Giant Steps", artist: "John Coltrane"), at: 0, in: .library("jazz"))
        let firstOfView = try await serverView()[0].id
        _ = try await client.delete(id: firstOfView)
        // Then the next pull reloads the view and the replica shows it
        let pulled = try await replica.pull()
        #expect(pulled.reloaded && pulled.version > first.version)
        local = try await replica.albums()
        remote = try await serverView()
        #expect(local.map(\.id) == remote.map(\.id) && local.count == 7)
        #expect(local.first { $0.id == added.id }?.library == "jazz")
        // And every write is refused, saying what to do instead; nothing is queued
        let id = local[0].id
        await #expect(throws: ReplicaError.readOnly(view: "everything", what: "add an album")) {
            try await replica.add(AlbumInput(title: "No", artist: "Nobody"))
        }
        await #expect(throws: ReplicaError.readOnly(view: "everything", what: "delete an album")) { try await replica.delete(id: id) }
        await #expect(throws: ReplicaError.readOnly(view: "everything", what: "move an album")) { try await replica.move(id: id, to: 3) }
        await #expect(throws: ReplicaError.readOnly(view: "everything", what: "change an album")) {
            try await replica.update(id: id, AlbumPatchInput(year: 1999))
        }
        #expect(try await replica.hasPendingChanges() == false)
        #expect(ReplicaError.readOnly(view: "everything", what: "add an album").description.contains("change the album in its library"))
    }

    /// `GET /views/everything/albums` requests the server answered so far (its metrics).
    func viewListRequests() throws -> Int {
        let metrics = try RawHTTPClient.request(port: server.port, path: "/metrics").text
        return metrics.split(separator: "\n")
            .filter { $0.hasPrefix("bluelibrary_http_requests_total{") && $0.contains("/views/") && $0.contains("/albums\"")
                && $0.contains("method=\"GET\"") }
            .compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }
            .reduce(0, +)
    }

    @Test func aFollowingViewReplicaShowsAnotherClientsChangeInASourceWithinASecond() async throws {
        try await given()
        let replica = try LibraryReplica(path: directory.file("follow.sqlite"), client: client, view: "everything")
        try await replica.sync()
        let following = Task { try await replica.follow() }
        defer { following.cancel() }
        #expect(await eventually(timeout: .seconds(5)) { await replica.isFollowing })
        let other = BlueLibraryClient(baseURL: client.baseURL)
        func matches() async throws -> Bool {
            plainAlbums(try await replica.albums()) == plainAlbums(try await serverView())
        }

        // When another client adds to one source and deletes from the other
        let added = try await other.add(AlbumInput(title: "Giant Steps", artist: "John Coltrane"), at: 0, in: .library("jazz"))
        // Then the view's replica shows it within a second, without sync() or pull()
        #expect(try await eventually(timeout: .seconds(1)) { try await replica.albums().contains { $0.id == added.id } })
        #expect(try await replica.albums().first { $0.id == added.id }?.library == "jazz")
        let first = try await other.album(at: 0)
        _ = try await other.delete(id: first.id)
        #expect(try await eventually(timeout: .seconds(1)) { try await !replica.albums().contains { $0.id == first.id } })
        #expect(try await matches())

        // A burst (one batch: 20 events of one source) is coalesced: events the pull already
        // covered start none of their own.
        let before = try viewListRequests()
        _ = try await other.batch((1...20).map { .add(AlbumInput(title: "Burst \($0)", artist: "Many")) }, in: "jazz")
        #expect(try await eventually(timeout: .seconds(5)) { try await replica.albums().count == 27 })
        let pulls = try viewListRequests() - before
        #expect(pulls <= 2, "\(pulls) view list requests for one burst (a pull is one request: the view's first page, all of it)")
        #expect(try await matches())

        // Writes stay refused while it follows, and setOnline(false) stops it.
        await #expect(throws: ReplicaError.readOnly(view: "everything", what: "add an album")) {
            try await replica.add(AlbumInput(title: "No", artist: "Nobody"))
        }
        await replica.setOnline(false)
        await #expect(throws: ReplicaError.offline) { try await following.value }
        #expect(await !replica.isFollowing)
    }

    @Test func followingAViewThatIsGoneEndsWith404() async throws {
        try await given()
        let replica = try LibraryReplica(path: directory.file("gone.sqlite"), client: client, view: "everything")
        try await replica.sync()
        try await client.deleteView("everything")
        await #expect(throws: ReplicaError.self) { try await replica.follow() }
        #expect(await !replica.isFollowing)
    }

    @Test func theModelPagesTheViewsReplica() async throws {
        try await given()
        let replica = try LibraryReplica(path: directory.file("view.sqlite"), client: client, view: "everything")
        try await replica.sync()
        let model = AlbumListModel(replica: replica, query: AlbumPageQuery(limit: 4))
        #expect(model.isFromReplica && model.source == .view("everything"))
        try await model.loadAndWait()
        try await model.loadAndWait(more: true)
        let remote = try await serverView()
        #expect(model.items.map(\.id) == remote.map(\.id) && !model.hasMore && !model.isOutdated)
    }

    @Test func aFileOfAViewIsNotALibrarysAndTheReverse() async throws {
        try await given()
        let path = directory.file("view.sqlite")
        _ = try LibraryReplica(path: path, client: client, view: "everything")
        #expect(throws: ReplicaError.wrongSource(file: path, holds: "view everything", asked: "library default")) {
            _ = try LibraryReplica(path: path, client: self.client)
        }
        #expect(throws: ReplicaError.wrongSource(file: path, holds: "view everything", asked: "view other")) {
            _ = try LibraryReplica(path: path, client: self.client, view: "other")
        }
        let library = directory.file("library.sqlite")
        _ = try LibraryReplica(path: library, client: client)
        #expect(throws: ReplicaError.wrongSource(file: library, holds: "library default", asked: "view everything")) {
            _ = try LibraryReplica(path: library, client: self.client, view: "everything")
        }
    }
}
