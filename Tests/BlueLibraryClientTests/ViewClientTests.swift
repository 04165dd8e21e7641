import BlueLibraryClient
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// Composite views through the async client and `AlbumListModel`, against the real app
/// in-process (seeded with the tutorial's five albums in `default`).
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class ViewClientTests {
    let server: LiveServer
    var client: BlueLibraryClient { server.client }

    init() throws { server = try LiveServer() }

    // MARK: Views

    @Test(arguments: ServerLock.allCases) func viewsAreDefinedListedUpdatedAndDeleted(lock: ServerLock) async throws {
        let server = try self.server.with(lock), client = server.client
        _ = try await client.createLibrary(id: "jazz")
        let view = try await client.createView(ViewInput(id: "everything", name: "Everything", sources: ["default", "jazz"]))
        #expect(view.sources == ["default", "jazz"] && view.filter.isEmpty && view.revision >= 1)
        let old = try await client.createView(ViewInput(id: "old", sources: ["jazz"], filter: ViewFilter(genre: "Jazz", yearTo: 1969)))
        #expect(old.name == "old" && old.filter == ViewFilter(genre: "Jazz", yearTo: 1969))
        #expect(Set(try await client.views().map(\.id)) == ["everything", "old"])
        let read = try await client.view("everything")
        #expect(read.versions?.keys.sorted() == ["default", "jazz"])

        let unknown = await #expect(throws: BlueLibraryClientError.self) {
            try await client.createView(ViewInput(id: "broken", sources: ["default", "nowhere"]))
        }
        #expect(unknown?.status == 422 && unknown?.problem?.errors.map(\.field) == ["sources"])

        let updated = try await client.updateView("old", ViewUpdate(name: "Old", sources: ["jazz", "default"]))
        #expect(updated.name == "Old" && updated.sources == ["jazz", "default"] && updated.revision == old.revision + 1)
        #expect(updated.filter == old.filter)
        let cleared = try await client.updateView("old", ViewUpdate(filter: ViewFilter()))
        #expect(cleared.filter.isEmpty && cleared.revision == old.revision + 2)

        try await client.deleteView("old")
        let gone = await #expect(throws: BlueLibraryClientError.self) { try await client.view("old") }
        #expect(gone?.status == 404)
        #expect(try await client.views().map(\.id) == ["everything"])
    }

    @Test func aViewPagesOverItsLibrariesAndChangesGoToTheOwningLibrary() async throws {
        _ = try await client.createLibrary(id: "jazz")
        let jazz = try await client.addAlbums(["Kind of Blue", "A Love Supreme"], to: "jazz")
        let defaults = try await server.albums()
        _ = try await client.createView(ViewInput(id: "all", sources: ["default", "jazz"]))

        let walked = try await client.walk(.view("all"), limit: 3)
        #expect(walked.map(\.id) == defaults.map(\.id) + jazz.map(\.id))
        #expect(walked.map(\.index) == Array(0..<7).map { Optional($0) })
        #expect(walked.map(\.library) == Array(repeating: "default", count: 5) + ["jazz", "jazz"])

        let byTitle = try await client.walk(.view("all"), limit: 2, sort: AlbumSort(.title))
        #expect(byTitle.map(\.title) == walked.map(\.title).sorted())

        let atFive = try await client.album(at: 5, in: .view("all"))
        #expect(atFive.id == jazz[0].id && atFive.library == "jazz")

        // Delete through the view, undo in the owning library.
        let deleted = try await client.delete(at: 6, in: .view("all"))
        #expect(deleted.id == jazz[1].id)
        #expect(try await client.library("jazz").albumCount == 1)
        _ = try await client.undo(in: "jazz")
        #expect(try await client.album(at: 6, in: .view("all")).id == jazz[1].id)

        // An add inside the jazz part lands in jazz.
        let added = try await client.add(AlbumInput(title: "Blue Train", artist: "John Coltrane"), at: 6, in: .view("all"))
        #expect(added.library == "jazz" && added.index == 6)
        #expect(try await client.album(at: 1, in: "jazz").id == added.id)
        #expect(try await client.album(at: 6, in: .view("all")).id == added.id)
        #expect(try await server.albums().count == 5)
    }

    @Test(arguments: ServerLock.allCases) func aModelOverAViewRevalidatesAndIsOutdatedByAChangeInAnySource(lock: ServerLock) async throws {
        let server = try self.server.with(lock), client = server.client
        _ = try await client.createLibrary(id: "jazz")
        try await client.addAlbums(["Kind of Blue", "A Love Supreme"], to: "jazz")
        _ = try await client.createView(ViewInput(id: "all", sources: ["default", "jazz"]))

        let model = AlbumListModel(client: client, source: .view("all"), query: AlbumPageQuery(limit: 3))
        #expect(model.source == .view("all"))
        let recorder = Recorder()
        model.addListener(recorder)
        try await model.loadAndWait()
        let first = model.snapshot
        #expect(first.items.count == 3 && first.hasMore && first.etag != nil)
        #expect(first.versions?.keys.sorted() == ["default", "jazz"] || first.versions == nil)

        // Nothing changed: 304, the items are kept (no didChange).
        try await model.loadAndWait()
        #expect(await recorder.wait(for: 5) == ["start", "change", "finish", "start", "finish"])

        // A change in the second source outdates the first page.
        try await client.addAlbums(["Giant Steps"], to: "jazz")
        try await model.loadAndWait(more: true)
        #expect(model.isOutdated && model.items.count == 6)
        try await model.loadAndWait()
        #expect(!model.isOutdated && model.items.count == 3)
        while model.hasMore { try await model.loadAndWait(more: true) }
        #expect(model.items.count == 8 && model.items.last?.title == "Giant Steps" && model.items.last?.library == "jazz")
    }
}
