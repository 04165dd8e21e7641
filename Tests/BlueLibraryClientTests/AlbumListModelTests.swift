import Dispatch
import Foundation
import HTTPTestSupport
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryClient

/// `AlbumListModel` against the real app: state flags, listener callbacks in order, paging to
/// the end, 304 revalidation, invalidate, cancel (the transfer is aborted), weak listeners, the
/// load-while-loading rule, and `loadAndWait`. Timing-sensitive cases go through a `GatedProxy`,
/// so a load is provably still running. Every wait suspends (events are awaited or polled with a
/// deadline); "nothing more happens" is asserted only once nothing is running. Where a test
/// shows that a cancelled load's transfer was aborted (the proxy sees the client hang up), the
/// client's timeout is 10 minutes, so the hang-up cannot be the timeout's.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class AlbumListModelTests {
    let server: LiveServer
    var client: BlueLibraryClient { server.client }

    init() throws { server = try LiveServer() }

    func makeModel(limit: Int = 2, client: BlueLibraryClient? = nil) -> (AlbumListModel, Recorder) {
        let model = AlbumListModel(client: client ?? self.client, query: AlbumPageQuery(limit: limit))
        let recorder = Recorder()
        model.addListener(recorder)
        return (model, recorder)
    }

    @Test func firstLoadGoesFromEmptyToLoadedWithCallbacksInOrder() async throws {
        // Held at the proxy, so the in-flight flags are checked while the load provably runs.
        let proxy = try GatedProxy(upstreamPort: server.port)
        proxy.gated = true
        let (model, recorder) = makeModel(limit: 3, client: LiveServer.client(port: proxy.port))
        let initial = model.snapshot
        #expect(!initial.isLoaded && !initial.isLoading && !initial.isLoadingMore && !initial.isOutdated)
        #expect(initial.items.isEmpty && !initial.hasMore)

        #expect(model.load() == .started)
        #expect(await proxy.requestsArrive(1))
        #expect(model.isLoading && !model.isLoadingMore && !model.isLoaded)
        proxy.release()
        #expect(await recorder.wait(for: 3) == ["start", "change", "finish"])
        let loaded = model.snapshot
        #expect(loaded.isLoaded && !loaded.isLoading && !loaded.isOutdated)
        #expect(loaded.items.map(\.title) == ["Best of Bowie", "It's My Life", "Nothing Like The Sun"])
        #expect(loaded.hasMore && loaded.etag != nil && loaded.version != nil && loaded.loadedAt != nil)
    }

    @Test(arguments: ServerLock.allCases) func loadAndWaitReturnsAfterTheListenersHeardTheEnd(lock: ServerLock) async throws {
        let server = try self.server.with(lock), client = server.client
        let (model, recorder) = makeModel(limit: 3, client: client)
        #expect(try await model.loadAndWait() == .started)
        #expect(recorder.events == ["start", "change", "finish"])  // delivered before the return
        #expect(model.isLoaded && !model.isLoading && model.items.count == 3)
        #expect(try await model.loadAndWait(more: true) == .started)
        #expect(recorder.events.count == 6 && model.items.count == 5 && !model.hasMore)
        #expect(try await model.loadAndWait(more: true) == .noMorePages)
        #expect(recorder.events.count == 6)
    }

    @Test(arguments: ServerLock.allCases) func loadMoreAppendsUntilThereIsNoMore(lock: ServerLock) async throws {
        let server = try self.server.with(lock), client = server.client
        for i in 0..<3 { _ = try await client.add(AlbumInput(title: "Added \(i)", artist: "Band \(i)"), at: i * 2) }
        let expected = try await server.albums()
        #expect(expected.count == 8)

        let proxy = try GatedProxy(upstreamPort: server.port)
        let (model, recorder) = makeModel(limit: 3, client: server.client(port: proxy.port))
        try await model.loadAndWait()
        var pages = 1
        proxy.gated = true
        while model.hasMore {
            let seen = recorder.events.count
            #expect(model.load(more: true) == .started)
            #expect(await proxy.requestsArrive(pages + 1))
            #expect(model.isLoadingMore && model.isLoading && model.isLoaded)
            proxy.release()
            #expect(await recorder.next(3, after: seen) == ["start", "change", "finish"])
            #expect(!model.isLoadingMore && !model.isLoading)
            pages += 1
        }
        #expect(pages == 3)
        #expect(model.items == expected)
        #expect(model.items.map(\.index) == Array(0..<8))
        // At the end, more is refused without a request or a callback.
        let seen = recorder.events.count
        #expect(model.load(more: true) == .noMorePages)
        await drain(model)
        #expect(recorder.events.count == seen && proxy.requests.count == 3)
        #expect(!model.isOutdated)
    }

    @Test(arguments: ServerLock.allCases) func unchangedListRevalidatesWith304AndKeepsEveryPage(lock: ServerLock) async throws {
        let server = try self.server.with(lock), client = server.client
        let proxy = try GatedProxy(upstreamPort: server.port)
        let (model, recorder) = makeModel(limit: 2, client: server.client(port: proxy.port))
        try await model.loadAndWait()
        try await model.loadAndWait(more: true)
        let before = model.snapshot
        #expect(before.items.count == 4 && before.hasMore)

        // Reload: the first page's ETag goes out, the server says 304, nothing changes.
        #expect(try await model.loadAndWait() == .started)
        #expect(Array(recorder.events.dropFirst(6)) == ["start", "finish"])
        let after = model.snapshot
        #expect(after.items == before.items && after.next == before.next && after.etag == before.etag)
        #expect((after.loadedAt ?? .distantPast) > (before.loadedAt ?? .distantFuture))
        let reload = try #require(proxy.requests.last)
        #expect(reload.target == "/albums?limit=2")
        #expect(reload.headers["if-none-match"] == before.etag)
        try #require(proxy.requests.count == 3)
        #expect(proxy.requests[1].headers["if-none-match"] == nil)  // a next page is never conditional
        // Every request, the conditional one too, carries the token of a locked server (and none for an open one).
        #expect(proxy.requests.map { $0.headers["authorization"] } == Array(repeating: lock.token.map { "Bearer \($0)" }, count: 3))

        // After a change the same reload is a 200 that replaces the pages with the first one.
        _ = try await client.add(AlbumInput(title: "Fresh", artist: "Face"), at: 0)
        try await model.loadAndWait()
        #expect(Array(recorder.events.dropFirst(8)) == ["start", "change", "finish"])
        #expect(model.items.map(\.title) == ["Fresh", "Best of Bowie"])
        #expect((model.snapshot.version ?? 0) > (before.version ?? .max))
    }

    @Test(arguments: ServerLock.allCases) func aNextPageFromANewerVersionMarksTheModelOutdated(lock: ServerLock) async throws {
        let server = try self.server.with(lock), client = server.client
        let (model, recorder) = makeModel(limit: 2, client: client)
        try await model.loadAndWait()
        _ = try await client.add(AlbumInput(title: "Late", artist: "Comer"))  // appended: on a later page
        try await model.loadAndWait(more: true)
        #expect(model.isOutdated)
        while model.hasMore { try await model.loadAndWait(more: true) }
        // Cursor paging: every album exactly once, the late one included.
        #expect(model.items.map(\.id) == (try await server.albums()).map(\.id))
        // A reload brings it up to date.
        let seen = recorder.events.count
        try await model.loadAndWait()
        #expect(Array(recorder.events.dropFirst(seen)) == ["start", "change", "finish"])
        #expect(!model.isOutdated && model.items.count == 2)
    }

    @Test func invalidateWithoutEraseKeepsItemsAndTheNextLoadRevalidates() async throws {
        let (model, recorder) = makeModel()
        try await model.loadAndWait()
        let items = model.items
        model.invalidate()
        await drain(model)
        #expect(model.isOutdated && model.isLoaded && model.items == items)
        #expect(recorder.events.count == 3)  // no callback for invalidate without erase
        try await model.loadAndWait()
        #expect(Array(recorder.events.dropFirst(3)) == ["start", "finish"])  // still current: 304
        #expect(!model.isOutdated && model.items == items)
    }

    @Test func invalidateWithEraseDropsItemsAndETag() async throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        let (model, recorder) = makeModel(client: LiveServer.client(port: proxy.port))
        try await model.loadAndWait()
        model.invalidate(erase: true)
        #expect(await recorder.next(1, after: 3) == ["change"])
        let erased = model.snapshot
        #expect(erased.isOutdated && !erased.isLoaded && erased.items.isEmpty && !erased.hasMore && erased.etag == nil)
        #expect(model.load(more: true) == .noMorePages)

        try await model.loadAndWait()
        #expect(Array(recorder.events.dropFirst(4)) == ["start", "change", "finish"])  // a full 200, not a 304
        #expect(proxy.requests.last?.headers["if-none-match"] == nil)
        #expect(model.isLoaded && !model.isOutdated && model.items.count == 2)

        // Erasing an empty model tells nobody anything.
        let empty = AlbumListModel(client: client)
        let quiet = Recorder()
        empty.addListener(quiet)
        empty.invalidate(erase: true)
        await drain(empty)
        #expect(quiet.events.isEmpty && empty.isOutdated)
    }

    @Test func invalidateWithEraseCancelsTheRunningLoad() async throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        proxy.gated = true
        let (model, recorder) = makeModel(client: LiveServer.client(port: proxy.port, timeout: 600))
        let waiting = Task { try await model.loadAndWait() }
        #expect(await proxy.requestsArrive(1))
        model.invalidate(erase: true)
        let result = try #require(await outcome(of: waiting))
        #expect(throws: BlueLibraryClientError.cancelled) { try result.get() }
        #expect(recorder.events == ["start", "cancel"])  // no items were held: no change
        #expect(await proxy.hangUpsArrive(1))  // the transfer was aborted
        #expect(!model.isLoading && !model.isLoaded && model.isOutdated)
    }

    @Test func invalidateDuringALoadKeepsTheModelOutdated() async throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        let (model, recorder) = makeModel(client: LiveServer.client(port: proxy.port))
        proxy.gated = true
        model.load()
        #expect(await proxy.requestsArrive(1))
        model.invalidate()  // the running load may have read the library before the reason to invalidate
        proxy.release()
        #expect(await recorder.wait(for: 3) == ["start", "change", "finish"])
        #expect(model.isLoaded && model.isOutdated)
    }

    @Test func cancelAbortsTheRunningTransferAndTellsListenersOnce() async throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        proxy.gated = true
        let (model, recorder) = makeModel(client: LiveServer.client(port: proxy.port, timeout: 600))
        #expect(model.cancel() == false)  // nothing running: nothing to say
        model.load()
        #expect(await proxy.requestsArrive(1))
        #expect(model.cancel())
        #expect(!model.isLoading && !model.isLoaded)
        #expect(model.cancel() == false)
        // The held request is given up by the client (the connection closes) although the proxy
        // never answers it and the client's timeout is 10 minutes away.
        #expect(await proxy.hangUpsArrive(1))
        await drain(model)
        #expect(recorder.events == ["start", "cancel"])
        #expect(model.items.isEmpty)

        // A cancelled load-more keeps what was loaded.
        proxy.gated = false
        try await model.loadAndWait()
        proxy.gated = true
        model.load(more: true)
        #expect(model.isLoadingMore)
        #expect(await proxy.requestsArrive(3))
        model.cancel()
        #expect(await proxy.hangUpsArrive(2))
        await drain(model)
        #expect(Array(recorder.events.dropFirst(5)) == ["start", "cancel"])
        #expect(model.items.count == 2 && model.hasMore && !model.isLoadingMore)
    }

    @Test func cancellingTheWaitingTaskCancelsTheLoad() async throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        proxy.gated = true
        let (model, recorder) = makeModel(client: LiveServer.client(port: proxy.port, timeout: 600))
        let waiting = Task { try await model.loadAndWait() }
        #expect(await proxy.requestsArrive(1))
        #expect(model.isLoading)
        waiting.cancel()
        let result = try #require(await outcome(of: waiting))
        #expect(throws: BlueLibraryClientError.cancelled) { try result.get() }
        #expect(recorder.events == ["start", "cancel"])
        #expect(!model.isLoading)
        #expect(await proxy.hangUpsArrive(1))

        // A task cancelled before it asks starts nothing.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await model.loadAndWait()
        }
        let earlyResult = try #require(await outcome(of: early))
        #expect(throws: BlueLibraryClientError.cancelled) { try earlyResult.get() }
        await drain(model)
        #expect(recorder.events.count == 2 && !model.isLoading)
    }

    @Test func failedLoadReportsTheProblemAndKeepsTheItems() async throws {
        let bad = AlbumListModel(client: client, query: AlbumPageQuery(limit: 501))
        let recorder = Recorder()
        bad.addListener(recorder)
        let error = await #expect(throws: BlueLibraryClientError.self) { try await bad.loadAndWait() }
        #expect(error?.status == 400)
        #expect(recorder.events == ["start", "fail(400)"])
        #expect(!bad.isLoading && !bad.isLoaded)

        let proxy = try GatedProxy(upstreamPort: server.port)
        let (model, events) = makeModel(client: LiveServer.client(port: proxy.port, timeout: 0.5))
        try await model.loadAndWait()
        let items = model.items
        proxy.gated = true  // the next answer never comes: a timeout
        let timeout = await #expect(throws: BlueLibraryClientError.self) { try await model.loadAndWait(more: true) }
        #expect(timeout == .timeout(seconds: 0.5))
        #expect(Array(events.events.dropFirst(3)) == ["start", "fail(no answer from the server within 0.5 s)"])
        #expect(model.items == items && model.hasMore && !model.isLoading)
        proxy.close()
    }

    @Test func listenersAreNotRetained() async throws {
        let (model, kept) = makeModel()
        let log = SharedLog()
        weak var released: Recorder?
        do {
            let temporary = Recorder(name: "temporary", shared: log)
            model.addListener(temporary)
            model.addListener(temporary)  // twice: still one listener
            released = temporary
        }
        #expect(released == nil)  // the model did not keep it alive

        let alive = Recorder(name: "alive", shared: log)
        model.addListener(alive)
        try await model.loadAndWait()
        #expect(kept.events.count == 3)
        #expect(log.all == ["alive:start", "alive:change", "alive:finish"])

        // A removed listener hears nothing more.
        model.removeListener(alive)
        try await model.loadAndWait()
        #expect(kept.events.count == 5)
        #expect(alive.events.count == 3)
    }

    @Test func listenersAreCalledOnTheCallbackQueue() async throws {
        let queue = DispatchQueue(label: "test.callbacks")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "mine")
        let model = AlbumListModel(client: client, query: AlbumPageQuery(limit: 2), callbackQueue: queue)
        final class QueueChecker: AlbumListModelListener, Sendable {
            let key: DispatchSpecificKey<String>
            let onQueue = Mutex<[Bool]>([])
            init(key: DispatchSpecificKey<String>) { self.key = key }
            func check() { onQueue.withLock { $0.append(DispatchQueue.getSpecific(key: key) == "mine") } }
            func didStartLoad(_ model: AlbumListModel) { check() }
            func didChange(_ model: AlbumListModel) { check() }
            func didFinishLoad(_ model: AlbumListModel) { check() }
        }
        let checker = QueueChecker(key: key)
        model.addListener(checker)
        try await model.loadAndWait()
        #expect(checker.onQueue.withLock { $0 } == [true, true, true])
    }

    // MARK: The load-while-loading rule

    @Test func aSecondResetJoinsTheRunningOne() async throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        proxy.gated = true
        let (model, recorder) = makeModel(client: LiveServer.client(port: proxy.port))
        #expect(model.load() == .started)
        #expect(await proxy.requestsArrive(1))
        #expect(model.load() == .joined)
        let joined = Task { try await model.loadAndWait(more: false) }
        #expect(await eventually(timeout: modelWait) { model.waitingCalls == 1 })
        proxy.release()
        #expect(try #require(await outcome(of: joined)).get() == .joined)  // resumed by the one load's end
        #expect(recorder.events == ["start", "change", "finish"])
        #expect(!model.isLoading)  // nothing runs: nothing more can come
        #expect(proxy.requests.count == 1)  // one request for three calls
    }

    @Test func aMoreDuringAResetIsQueuedAndSentAfterIt() async throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        proxy.gated = true
        let (model, recorder) = makeModel(client: LiveServer.client(port: proxy.port))
        #expect(model.load() == .started)
        #expect(await proxy.requestsArrive(1))
        #expect(model.load(more: true) == .queued)  // nothing loaded yet, but the reset will tell
        let queued = Task { try await model.loadAndWait(more: true) }
        #expect(await eventually(timeout: modelWait) { model.waitingCalls == 1 })
        #expect(!model.isLoadingMore)
        proxy.release()
        #expect(await proxy.requestsArrive(2))
        #expect(model.isLoadingMore)
        try #require(proxy.requests.count == 2)
        #expect(proxy.requests[1].target.contains("cursor="))
        proxy.release()
        // The queued call waits for the next page, not only the reset.
        #expect(try #require(await outcome(of: queued)).get() == .queued)
        #expect(recorder.events == ["start", "change", "finish", "start", "change", "finish"])
        #expect(model.items.count == 4)
        #expect(proxy.requests.count == 2)
    }

    @Test func aQueuedMoreIsDroppedWhenTheResetIsCancelled() async throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        proxy.gated = true
        let (model, recorder) = makeModel(client: LiveServer.client(port: proxy.port, timeout: 600))
        model.load()
        #expect(await proxy.requestsArrive(1))
        let queued = Task { try await model.loadAndWait(more: true) }
        #expect(await eventually(timeout: modelWait) { model.waitingCalls == 1 })
        model.cancel()
        let result = try #require(await outcome(of: queued))
        #expect(throws: BlueLibraryClientError.cancelled) { try result.get() }
        #expect(await proxy.hangUpsArrive(1))
        #expect(recorder.events == ["start", "cancel"])
        #expect(!model.isLoading && proxy.requests.count == 1)
    }

    @Test func aSecondMoreJoinsTheRunningMore() async throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        let (model, recorder) = makeModel(client: LiveServer.client(port: proxy.port))
        try await model.loadAndWait()
        proxy.gated = true
        #expect(model.load(more: true) == .started)
        #expect(await proxy.requestsArrive(2))
        #expect(model.load(more: true) == .joined)
        proxy.release()
        #expect(await recorder.next(3, after: 3) == ["start", "change", "finish"])
        #expect(model.items.count == 4)
        #expect(proxy.requests.count == 2)
    }

    @Test func aResetDuringAMoreCancelsTheMoreAndStartsOver() async throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        let (model, recorder) = makeModel(client: LiveServer.client(port: proxy.port, timeout: 600))
        try await model.loadAndWait()
        proxy.gated = true
        let more = Task { try await model.loadAndWait(more: true) }
        #expect(await proxy.requestsArrive(2))
        #expect(model.load() == .started)
        #expect(model.isLoading && !model.isLoadingMore)
        let moreResult = try #require(await outcome(of: more))
        #expect(throws: BlueLibraryClientError.cancelled) { try moreResult.get() }
        #expect(await proxy.hangUpsArrive(1))  // the next page's transfer was aborted
        #expect(await proxy.requestsArrive(3))
        proxy.release()
        #expect(await recorder.next(4, after: 3) == ["start", "cancel", "start", "finish"])  // 304: the first page is unchanged
        #expect(await eventually(timeout: modelWait) { !model.isLoading })
        await drain(model)
        #expect(recorder.events.count == 7)
        #expect(model.items.count == 2 && model.hasMore)
    }
}
