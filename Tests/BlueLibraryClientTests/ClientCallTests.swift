#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryClient
import Foundation
import TestThreads
import Testing

/// Every typed call against the real app in-process, through the async API: happy paths, the
/// problems they throw, transport failures and cancellation (a cancelled task aborts the transfer).
/// `BlockingCallTests` covers the blocking layer.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class ClientCallTests {
    let server: LiveServer
    var client: BlueLibraryClient { server.client }

    init() throws { server = try LiveServer() }

    // MARK: Albums

    @Test(arguments: ServerLock.allCases) func albumAddMoveDeleteAndUndoRoundTrip(lock: ServerLock) async throws {
        let server = try self.server.with(lock), client = server.client
        let first = try await client.album(at: 0)
        #expect(first.title == "Best of Bowie" && first.index == 0)
        #expect(try await client.album(id: first.id) == first)
        #expect(first.createdDate != nil)

        let added = try await client.add(AlbumInput(title: "Low", artist: "David Bowie", genre: "Rock", year: 1977), at: 1)
        #expect(added.index == 1 && added.genre == "Rock" && added.year == 1977 && added.coverUrl == nil)
        #expect(try await client.album(at: 1).id == added.id)
        let appended = try await client.add(AlbumInput(title: "Heroes", artist: "David Bowie", coverUrl: "https://example.com/h.png"))
        #expect(appended.index == 6 && appended.genre == "Pop" && appended.coverUrl == "https://example.com/h.png")

        let moved = try await client.move(id: appended.id, to: 0)
        #expect(moved.index == 0 && moved.id == appended.id)
        #expect(try await client.undoStatus().depth == 3)

        let removed = try await client.delete(id: added.id)
        #expect(removed.id == added.id && removed.index == 2)
        let removedAt = try await client.delete(at: 0)
        #expect(removedAt.id == appended.id && removedAt.index == 0)

        // Undo the two deletes: the albums come back where they were.
        let undone = try await client.undo()
        #expect(undone.undone.contains("Heroes"))
        #expect(undone.album?.id == appended.id && undone.album?.index == 0)
        #expect(try await client.undo().album?.id == added.id)
        #expect(try await client.album(id: added.id).index == 2)
        let status = try await client.undoStatus()
        #expect(status.canUndo && status.depth == 3)
    }

    @Test func addWithAnIdempotencyKeyAddsOnce() async throws {
        let input = AlbumInput(title: "Once", artist: "Only")
        let a = try await client.add(input, idempotencyKey: "key-1")
        let b = try await client.add(input, idempotencyKey: "key-1")
        #expect(a.id == b.id)
        #expect(try await server.albums().filter { $0.title == "Once" }.count == 1)
    }

    @Test(arguments: ServerLock.allCases) func stateFollowsTheClientAndRejectsABadIndex(lock: ServerLock) async throws {
        let server = try self.server.with(lock), client = server.client
        let second = try await client.album(at: 1)
        let saved = try await client.setState(.index(1), client: "phone")
        #expect(saved.client == "phone" && saved.currentAlbumIndex == 1 && saved.albumID == second.id && saved.updatedAt != nil)
        #expect(try await client.state(client: "phone") == saved)
        let byID = try await client.setState(.album(id: try await client.album(at: 3).id), client: "phone")
        #expect(byID.currentAlbumIndex == 3)
        let fresh = try await client.state(client: "tablet")
        #expect(fresh.currentAlbumIndex == 0 && fresh.updatedAt == nil)
        // An add makes the new album the client's current one.
        let added = try await client.add(AlbumInput(title: "New", artist: "Band"), at: 0, client: "tablet")
        #expect(try await client.state(client: "tablet").albumID == added.id)

        let error = await #expect(throws: BlueLibraryClientError.self) { try await client.setState(.index(99), client: "phone") }
        #expect(error?.status == 422)
        #expect(error?.problem?.errors.first?.field == "currentAlbumIndex")
        let badClient = await #expect(throws: BlueLibraryClientError.self) { try await client.state(client: "no spaces allowed") }
        #expect(badClient?.status == 400)
    }

    // MARK: Problems

    @Test(arguments: ServerLock.allCases) func unknownAlbumIs404WithTheProblemDetail(lock: ServerLock) async throws {
        let server = try self.server.with(lock), client = server.client
        let error = await #expect(throws: BlueLibraryClientError.self) { try await client.album(id: "01HZY8Q6V9T3X2K7M4N5P6R7S8") }
        guard case let .problem(problem)? = error else {
            Issue.record("expected a problem, got \(String(describing: error))")
            return
        }
        #expect(problem.status == 404)
        #expect(problem.title.isEmpty == false)
        #expect(problem.detail.contains("01HZY8Q6V9T3X2K7M4N5P6R7S8"))
        #expect(await #expect(throws: BlueLibraryClientError.self) { try await client.delete(at: 999) }?.status == 404)
        #expect(await #expect(throws: BlueLibraryClientError.self) { try await client.delete(id: "nope") }?.status == 404)
    }

    @Test(arguments: ServerLock.allCases) func invalidAlbumIs422WithEveryFieldError(lock: ServerLock) async throws {
        let server = try self.server.with(lock), client = server.client
        let error = await #expect(throws: BlueLibraryClientError.self) {
            try await client.add(AlbumInput(title: " ", artist: "", year: 99, coverUrl: "not a url"))
        }
        let problem = try #require(error?.problem)
        #expect(problem.status == 422)
        #expect(Set(problem.errors.map(\.field)) == ["title", "artist", "year", "coverUrl"])
        #expect(!problem.description.contains("\n"))
        // Nothing was added.
        #expect(try await server.albums().count == 5)

        let move = await #expect(throws: BlueLibraryClientError.self) { try await client.move(id: try await client.album(at: 0).id, to: 50) }
        #expect(move?.status == 422)
        #expect(move?.problem?.errors.map(\.field) == ["index"])
        #expect(move?.problem?.type == "urn:bluelibrary:problem:index-out-of-range")
    }

    @Test func undoOnAnEmptyStackIs409() async throws {
        let error = await #expect(throws: BlueLibraryClientError.self) { try await self.client.undo() }
        #expect(error?.status == 409)
        #expect(error?.problem?.type == "urn:bluelibrary:problem:undo-stack-empty")
        #expect(error?.description == "there is nothing to undo")
        let status = try await client.undoStatus()
        #expect(status.depth == 0 && !status.canUndo && status.next == nil)
    }

    @Test func badListQueryIs400() async throws {
        let error = await #expect(throws: BlueLibraryClientError.self) { try await self.client.list(AlbumPageQuery(limit: 0)) }
        #expect(error?.status == 400)
        #expect(error?.problem?.detail.isEmpty == false)
    }

    // MARK: Transport

    @Test func refusedConnectionIsATransportError() async throws {
        let closedPort = try GatedProxy(upstreamPort: 1)
        let port = closedPort.port
        closedPort.close()
        let error = await #expect(throws: BlueLibraryClientError.self) { try await LiveServer.client(port: port, timeout: 5).album(at: 0) }
        guard case let .transport(_, message)? = error else {
            Issue.record("expected a transport error, got \(String(describing: error))")
            return
        }
        #expect(message.contains("127.0.0.1:\(port)"))
    }

    @Test func aServerThatNeverAnswersTimesOut() async throws {
        let silent = try GatedProxy(upstreamPort: server.port)
        silent.gated = true  // holds every request and never releases it
        let error = await #expect(throws: BlueLibraryClientError.self) { try await LiveServer.client(port: silent.port, timeout: 0.5).album(at: 0) }
        #expect(error == .timeout(seconds: 0.5))
        // FoundationNetworking alone would give up at once, before connecting (it truncates
        // 0.5 s to 0); the client keeps its own deadline, so the request reached the server.
        #expect(silent.requests.count == 1)
        #expect(await silent.hangUpsArrive(1))  // and at the deadline the transfer was aborted
        silent.close()
    }

    // MARK: Cancellation

    @Test func cancellingTheTaskAbortsTheTransfer() async throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        proxy.gated = true
        let client = LiveServer.client(port: proxy.port, timeout: 600)
        let call = Task { try await client.list(AlbumPageQuery(limit: 2)) }
        #expect(await proxy.requestsArrive(1))
        call.cancel()
        let result = try #require(await outcome(of: call))
        #expect(throws: BlueLibraryClientError.cancelled) { try result.get() }
        // The held request is given up: the connection closes although the proxy never
        // answers and the client's timeout is 10 minutes away.
        #expect(await proxy.hangUpsArrive(1))
        // The client stays usable.
        proxy.gated = false
        #expect(try await client.album(at: 0).title == "Best of Bowie")
    }

    @Test func aCancelledAddHeldOnTheWayNeverReachesTheServer() async throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        proxy.gated = true
        let client = LiveServer.client(port: proxy.port, timeout: 600)
        let call = Task { try await client.add(AlbumInput(title: "Never", artist: "Sent")) }
        #expect(await proxy.requestsArrive(1))
        call.cancel()
        let result = try #require(await outcome(of: call))
        #expect(throws: BlueLibraryClientError.cancelled) { try result.get() }
        #expect(await proxy.hangUpsArrive(1))  // the proxy drops a request its client gave up
        proxy.release()
        #expect(try await server.albums().count == 5)
    }

    @Test func aTaskCancelledBeforeTheCallSendsNothing() async throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        let client = LiveServer.client(port: proxy.port)
        let call = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await client.album(at: 0)
        }
        let result = try #require(await outcome(of: call))
        #expect(throws: BlueLibraryClientError.cancelled) { try result.get() }
        // A later call goes through, and it is the only request the proxy ever saw.
        #expect(try await client.album(at: 1).index == 1)
        #expect(proxy.requests.map(\.target) == ["/albums/at/1"])
    }

    // MARK: Lists (cursor paging)

    @Test(arguments: ServerLock.allCases) func listPagesWithCursorsAndHeaders(lock: ServerLock) async throws {
        let server = try self.server.with(lock), client = server.client
        let first = try await client.list(AlbumPageQuery(limit: 2))
        #expect(first.items.map(\.title) == ["Best of Bowie", "It's My Life"])
        #expect(first.items.map(\.index) == [0, 1])
        let next = try #require(first.next)
        #expect(first.etag != nil)
        #expect(first.nextLink?.query?.contains("cursor=") == true)
        #expect(first.total == nil)

        var titles = first.items.map(\.title)
        var page = first
        var cursor: String? = next
        while let at = cursor {
            page = try await client.list(AlbumPageQuery(limit: 2).continuing(at: at))
            titles += page.items.map(\.title)
            cursor = page.next
        }
        #expect(titles.count == 5 && Set(titles).count == 5)
        #expect(page.nextLink == nil)
        #expect(try await server.albums().map(\.title) == titles)
    }

    @Test(arguments: ServerLock.allCases) func listRevalidatesWithIfNoneMatch(lock: ServerLock) async throws {
        let server = try self.server.with(lock), client = server.client
        let page = try await client.list(AlbumPageQuery(limit: 3))
        let etag = try #require(page.etag)
        #expect(try await client.list(AlbumPageQuery(limit: 3), ifNoneMatch: etag) == .notModified)
        _ = try await client.add(AlbumInput(title: "Changes", artist: "Someone"), at: 0)
        guard case let .modified(fresh) = try await client.list(AlbumPageQuery(limit: 3), ifNoneMatch: etag) else {
            Issue.record("a changed library must not answer 304")
            return
        }
        #expect(fresh.items.first?.title == "Changes")
        #expect(fresh.version > page.version)
        #expect(fresh.etag != etag)
    }

    @Test func listSortsFiltersAndCounts() async throws {
        let byTitle = try await client.list(AlbumPageQuery(limit: 50, sort: AlbumSort("-title"), count: true))
        #expect(byTitle.items.map(\.title) == byTitle.items.map(\.title).sorted(by: >))
        #expect(byTitle.total == 5)
        #expect(byTitle.items.allSatisfy { $0.index == nil })  // not position order: no index
        let search = try await client.list(AlbumPageQuery(q: "BOWIE", count: true))
        #expect(search.items.map(\.artist) == ["David Bowie"])
        #expect(search.total == 1)
        let years = try await client.list(AlbumPageQuery(sort: AlbumSort(.year), yearFrom: 1990, yearTo: 2000))
        #expect(years.items.allSatisfy { (1990...2000).contains($0.year ?? 0) })
        #expect(years.items.compactMap(\.year) == years.items.compactMap(\.year).sorted())
    }
}

/// The blocking layer: the same calls without `await`, on the thread that makes them.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class BlockingCallTests {
    let server: LiveServer
    var client: BlueLibraryClient { server.client }

    init() throws { server = try LiveServer() }

    @Test(arguments: ServerLock.allCases) func blockingCallsAnswerLikeTheAsyncOnes(lock: ServerLock) throws {
        let server = try self.server.with(lock), client = server.client
        let first = try client.album(at: 0)
        #expect(first.title == "Best of Bowie")
        #expect(try client.album(id: first.id) == first)
        let added = try client.add(AlbumInput(title: "Low", artist: "David Bowie"), at: 1, client: "cli")
        #expect(try client.move(id: added.id, to: 0).index == 0)
        #expect(try client.state(client: "cli").albumID == added.id)
        #expect(try client.setState(.index(2), client: "cli").currentAlbumIndex == 2)
        let page = try client.list(AlbumPageQuery(limit: 2))
        #expect(page.items.map(\.id) == [added.id, first.id])
        #expect(try client.list(AlbumPageQuery(limit: 2), ifNoneMatch: page.etag) == .notModified)
        #expect(try client.delete(id: added.id).index == 0)
        #expect(try client.delete(at: 0).id == first.id)
        #expect(try client.undoStatus().depth == 4)
        #expect(try client.undo().album?.id == first.id)
        let error = #expect(throws: BlueLibraryClientError.self) { try client.album(id: "nope") }
        #expect(error?.status == 404)
    }

    @Test func aBlockingCallTimesOut() throws {
        let silent = try GatedProxy(upstreamPort: server.port)
        silent.gated = true
        let error = #expect(throws: BlueLibraryClientError.self) { try LiveServer.client(port: silent.port, timeout: 0.5).album(at: 0) }
        #expect(error == .timeout(seconds: 0.5))
        #expect(silent.requests.count == 1)
        #expect(silent.waitForHangUps(1))
        silent.close()
    }
}
