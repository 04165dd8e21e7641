import BlueLibraryClient
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// Libraries, views and moves between libraries through the async client and `AlbumListModel`,
/// against the real app in-process (seeded with the tutorial's five albums in `default`).
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class LibraryClientTests {
    let server: LiveServer
    var client: BlueLibraryClient { server.client }

    init() throws { server = try LiveServer() }

    // MARK: Libraries

    @Test(arguments: ServerLock.allCases) func librariesAreCreatedRenamedAndDeletedWithTheServersRefusals(lock: ServerLock) async throws {
        let server = try self.server.with(lock), client = server.client
        #expect(try await client.libraries().map(\.id) == ["default"])
        #expect(try await client.library("default").albumCount == 5)

        let jazz = try await client.createLibrary(id: "jazz", name: "Jazz")
        #expect(jazz.id == "jazz" && jazz.name == "Jazz" && jazz.albumCount == 0)
        #expect(try await client.createLibrary(id: "blues").name == "blues")
        #expect(try await client.libraries().map(\.id) == ["blues", "default", "jazz"])

        let taken = await #expect(throws: BlueLibraryClientError.self) { try await client.createLibrary(id: "jazz") }
        #expect(taken?.status == 409)
        let bad = await #expect(throws: BlueLibraryClientError.self) { try await client.createLibrary(id: "Not An Id") }
        #expect(bad?.status == 422 && bad?.problem?.errors.map(\.field) == ["id"])

        let renamed = try await client.renameLibrary("jazz", to: "Jazz & Blues")
        #expect(renamed.name == "Jazz & Blues" && renamed.id == "jazz")
        #expect(try await client.library("jazz").name == "Jazz & Blues")

        try await client.addAlbums(["Kind of Blue"], to: "jazz")
        #expect(try await client.library("jazz").albumCount == 1)
        let nonEmpty = await #expect(throws: BlueLibraryClientError.self) { try await client.deleteLibrary("jazz") }
        #expect(nonEmpty?.status == 409)
        let isDefault = await #expect(throws: BlueLibraryClientError.self) { try await client.deleteLibrary("default", force: true) }
        #expect(isDefault?.status == 409)

        try await client.deleteLibrary("jazz", force: true)
        try await client.deleteLibrary("blues")
        let gone = await #expect(throws: BlueLibraryClientError.self) { try await client.library("jazz") }
        #expect(gone?.status == 404)
        #expect(try await client.libraries().map(\.id) == ["default"])
        #expect(try await server.albums().count == 5)
    }

    @Test func albumCallsActOnTheLibraryTheyAreGiven() async throws {
        _ = try await client.createLibrary(id: "jazz")
        let added = try await client.addAlbums(["Kind of Blue", "A Love Supreme", "Mingus Ah Um"], to: "jazz")
        #expect(added.map(\.index) == [0, 1, 2])
        #expect(try await client.walk("jazz", limit: 2).map(\.title) == ["Kind of Blue", "A Love Supreme", "Mingus Ah Um"])
        #expect(try await client.album(at: 1, in: "jazz").id == added[1].id)
        #expect(try await client.album(id: added[2].id, in: "jazz").index == 2)

        let moved = try await client.move(id: added[2].id, to: 0, in: "jazz")
        #expect(moved.index == 0)
        let deleted = try await client.delete(at: 1, in: "jazz")
        #expect(deleted.id == added[0].id)
        #expect(try await client.undoStatus(in: "jazz").depth == 5)
        #expect(try await client.undo(in: "jazz").album?.id == added[0].id)

        let state = try await client.setState(.album(id: added[1].id), client: "phone", in: "jazz")
        #expect(state.currentAlbumIndex == 2 && state.albumID == added[1].id)
        #expect(try await client.state(client: "phone", in: "jazz") == state)

        // The default library saw none of it.
        #expect(try await server.albums().count == 5)
        #expect(try await client.undoStatus().depth == 0)
        #expect(try await client.state(client: "phone").updatedAt == nil)
    }

    @Test(arguments: ServerLock.allCases) func aMoveBetweenLibrariesIsUndoneInTheLibraryItLeft(lock: ServerLock) async throws {
        let server = try self.server.with(lock), client = server.client
        _ = try await client.createLibrary(id: "jazz")
        try await client.addAlbums(["Kind of Blue"], to: "jazz")
        let first = try await client.album(at: 0)

        let moved = try await client.move(id: first.id, toLibrary: "jazz", at: 0)
        #expect(moved.id == first.id && moved.library == "jazz" && moved.index == 0)
        #expect(try await client.walk("jazz", limit: 10).map(\.id) == [first.id, try await client.album(at: 1, in: "jazz").id])
        #expect(try await server.albums().map(\.id).contains(first.id) == false)
        #expect(try await client.library("jazz").albumCount == 2)

        let appended = try await client.move(id: try await client.album(at: 0).id, toLibrary: "jazz")
        #expect(appended.library == "jazz" && appended.index == 2)
        let back = try await client.move(id: appended.id, from: "jazz", toLibrary: "default", at: 0)
        #expect(back.library == "default" && back.index == 0)

        // Undo in `jazz` puts back the album that went to `default`; undo in `default` the first move.
        _ = try await client.undo(in: "jazz")
        #expect(try await client.album(at: 2, in: "jazz").id == appended.id)
        _ = try await client.undo()
        _ = try await client.undo()
        #expect(try await client.album(at: 0).id == first.id)
        #expect(try await server.albums().count == 5)
        #expect(try await client.library("jazz").albumCount == 1)

        let missing = await #expect(throws: BlueLibraryClientError.self) {
            try await client.move(id: first.id, toLibrary: "nowhere", at: 0)
        }
        #expect(missing?.status == 422 && missing?.problem?.errors.map(\.field) == ["library"])
    }

    // MARK: The model

    @Test func aModelOverALibraryPagesItAndAnExpiredWalkLeavesItOutdated() async throws {
        _ = try await client.createLibrary(id: "big")
        let added = try await client.addAlbums((0..<140).map { "Album \($0)" }, to: "big")
        let model = AlbumListModel(client: client, source: "big", query: AlbumPageQuery(limit: 70))
        #expect(model.source == .library("big"))
        let recorder = Recorder()
        model.addListener(recorder)
        try await model.loadAndWait()
        #expect(model.items.map(\.id) == Array(added.prefix(70)).map(\.id) && model.hasMore && model.snapshot.versions == nil)

        // 65 albums not yet shown move before the cursor: more than a cursor can carry (64), so
        // the server answers 410 (the walk expired) and the model says it is outdated.
        for _ in 0..<65 { _ = try await client.move(id: try await client.album(at: 139, in: "big").id, to: 0, in: "big") }
        let expired = await #expect(throws: BlueLibraryClientError.self) { try await model.loadAndWait(more: true) }
        #expect(expired?.status == 410)
        #expect(model.isOutdated && model.items.count == 70)
        #expect(await recorder.wait(for: 5).suffix(2) == ["start", "fail(410)"])

        // A reload starts the walk again; it is exact from there.
        try await model.loadAndWait()
        #expect(!model.isOutdated)
        while model.hasMore { try await model.loadAndWait(more: true) }
        #expect(Set(model.items.map(\.id)) == Set(added.map(\.id)) && model.items.count == 140)
        #expect(try await server.albums().count == 5)
    }
}
