import BlueLibraryClient
import Dispatch
import Foundation
import Testing

/// `AlbumListModel` against the real app: state flags, listener callbacks in order, paging to
/// the end, 304 revalidation, invalidate, cancel, weak listeners, and the load-while-loading
/// rule. Timing-sensitive cases go through a `GatedProxy`, so a load is provably still running.
@Suite(.serialized, .timeLimit(.minutes(2))) final class AlbumListModelTests {
    let server: LiveServer
    var client: BlueLibraryClient { server.client }

    init() throws { server = try LiveServer() }

    func makeModel(limit: Int = 2, client: BlueLibraryClient? = nil) -> (AlbumListModel, Recorder) {
        let model = AlbumListModel(client: client ?? self.client, query: AlbumPageQuery(limit: limit))
        let recorder = Recorder()
        model.addListener(recorder)
        return (model, recorder)
    }

    @Test func firstLoadGoesFromEmptyToLoadedWithCallbacksInOrder() throws {
        // Held at the proxy, so the in-flight flags are checked while the load provably runs.
        let proxy = try GatedProxy(upstreamPort: server.port)
        proxy.gated = true
        let (model, recorder) = makeModel(limit: 3, client: LiveServer.client(port: proxy.port))
        let initial = model.snapshot
        #expect(!initial.isLoaded && !initial.isLoading && !initial.isLoadingMore && !initial.isOutdated)
        #expect(initial.items.isEmpty && !initial.hasMore)

        #expect(model.load() == .started)
        #expect(proxy.waitForRequests(1))
        #expect(model.isLoading && !model.isLoadingMore && !model.isLoaded)
        proxy.release()
        #expect(recorder.wait(for: 3) == ["start", "change", "finish"])
        let loaded = model.snapshot
        #expect(loaded.isLoaded && !loaded.isLoading && !loaded.isOutdated)
        #expect(loaded.items.map(\.title) == ["Best of Bowie", "It's My Life", "Nothing Like The Sun"])
        #expect(loaded.hasMore && loaded.etag != nil && loaded.version != nil && loaded.loadedAt != nil)
    }

    @Test func loadMoreAppendsUntilThereIsNoMore() throws {
        for i in 0..<3 { _ = try client.add(AlbumInput(title: "Added \(i)", artist: "Band \(i)"), at: i * 2) }
        let expected = try server.allAlbums()
        #expect(expected.count == 8)

        let proxy = try GatedProxy(upstreamPort: server.port)
        let (model, recorder) = makeModel(limit: 3, client: LiveServer.client(port: proxy.port))
        model.load()
        recorder.wait(for: 3)
        var pages = 1
        proxy.gated = true
        while model.hasMore {
            let seen = recorder.events.count
            #expect(model.load(more: true) == .started)
            #expect(proxy.waitForRequests(pages + 1))
            #expect(model.isLoadingMore && model.isLoading && model.isLoaded)
            proxy.release()
            #expect(recorder.next(3, after: seen) == ["start", "change", "finish"])
            #expect(!model.isLoadingMore && !model.isLoading)
            pages += 1
        }
        #expect(pages == 3)
        #expect(model.items == expected)
        #expect(model.items.map(\.index) == Array(0..<8))
        // At the end, more is refused without a request or a callback.
        let seen = recorder.events.count
        #expect(model.load(more: true) == .noMorePages)
        drain(model)
        #expect(recorder.events.count == seen)
        #expect(!model.isOutdated)
    }

    @Test func unchangedListRevalidatesWith304AndKeepsEveryPage() throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        let (model, recorder) = makeModel(limit: 2, client: LiveServer.client(port: proxy.port))
        model.load()
        recorder.wait(for: 3)
        model.load(more: true)
        recorder.wait(for: 6)
        let before = model.snapshot
        #expect(before.items.count == 4 && before.hasMore)

        // Reload: the first page's ETag goes out, the server says 304, nothing changes.
        #expect(model.load() == .started)
        #expect(recorder.next(2, after: 6) == ["start", "finish"])
        let after = model.snapshot
        #expect(after.items == before.items && after.next == before.next && after.etag == before.etag)
        #expect((after.loadedAt ?? .distantPast) > (before.loadedAt ?? .distantFuture))
        let reload = try #require(proxy.requests.last)
        #expect(reload.target == "/albums?limit=2")
        #expect(reload.headers["if-none-match"] == before.etag)
        try #require(proxy.requests.count == 3)
        #expect(proxy.requests[1].headers["if-none-match"] == nil)  // a next page is never conditional

        // After a change the same reload is a 200 that replaces the pages with the first one.
        _ = try client.add(AlbumInput(title: "Fresh", artist: "Face"), at: 0)
        model.load()
        #expect(recorder.next(3, after: 8) == ["start", "change", "finish"])
        #expect(model.items.map(\.title) == ["Fresh", "Best of Bowie"])
        #expect((model.snapshot.version ?? 0) > (before.version ?? .max))
    }

    @Test func aNextPageFromANewerVersionMarksTheModelOutdated() throws {
        let (model, recorder) = makeModel(limit: 2)
        model.load()
        recorder.wait(for: 3)
        _ = try client.add(AlbumInput(title: "Late", artist: "Comer"))  // appended: on a later page
        model.load(more: true)
        recorder.wait(for: 6)
        #expect(model.isOutdated)
        while model.hasMore {
            let seen = recorder.events.count
            model.load(more: true)
            recorder.wait(for: seen + 3)
        }
        // Cursor paging: every album exactly once, the late one included.
        #expect(model.items.map(\.id) == (try server.allAlbums()).map(\.id))
        // A reload brings it up to date.
        let seen = recorder.events.count
        model.load()
        #expect(recorder.next(3, after: seen) == ["start", "change", "finish"])
        #expect(!model.isOutdated && model.items.count == 2)
    }

    @Test func invalidateWithoutEraseKeepsItemsAndTheNextLoadRevalidates() throws {
        let (model, recorder) = makeModel()
        model.load()
        recorder.wait(for: 3)
        let items = model.items
        model.invalidate()
        drain(model)
        #expect(model.isOutdated && model.isLoaded && model.items == items)
        #expect(recorder.events.count == 3)  // no callback for invalidate without erase
        model.load()
        #expect(recorder.next(2, after: 3) == ["start", "finish"])  // still current: 304
        #expect(!model.isOutdated && model.items == items)
    }

    @Test func invalidateWithEraseDropsItemsAndETag() throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        let (model, recorder) = makeModel(client: LiveServer.client(port: proxy.port))
        model.load()
        recorder.wait(for: 3)
        model.invalidate(erase: true)
        #expect(recorder.next(1, after: 3) == ["change"])
        let erased = model.snapshot
        #expect(erased.isOutdated && !erased.isLoaded && erased.items.isEmpty && !erased.hasMore && erased.etag == nil)
        #expect(model.load(more: true) == .noMorePages)

        model.load()
        #expect(recorder.next(3, after: 4) == ["start", "change", "finish"])  // a full 200, not a 304
        #expect(proxy.requests.last?.headers["if-none-match"] == nil)
        #expect(model.isLoaded && !model.isOutdated && model.items.count == 2)

        // Erasing an empty model tells nobody anything.
        let empty = AlbumListModel(client: client)
        let quiet = Recorder()
        empty.addListener(quiet)
        empty.invalidate(erase: true)
        drain(empty)
        #expect(quiet.events.isEmpty && empty.isOutdated)
    }

    @Test func invalidateDuringALoadKeepsTheModelOutdated() throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        let (model, recorder) = makeModel(client: LiveServer.client(port: proxy.port))
        proxy.gated = true
        model.load()
        proxy.waitForRequests(1)
        model.invalidate()  // the running load may have read the library before the reason to invalidate
        proxy.release()
        #expect(recorder.wait(for: 3) == ["start", "change", "finish"])
        #expect(model.isLoaded && model.isOutdated)
    }

    @Test func cancelStopsTheRunningLoadAndTellsListenersOnce() throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        proxy.gated = true
        let (model, recorder) = makeModel(client: LiveServer.client(port: proxy.port))
        #expect(model.cancel() == false)  // nothing running: nothing to say
        model.load()
        proxy.waitForRequests(1)
        #expect(model.cancel())
        #expect(!model.isLoading && !model.isLoaded)
        #expect(model.cancel() == false)
        proxy.release()
        // The answer of the cancelled request is ignored even if it comes.
        Thread.sleep(forTimeInterval: 0.3)
        drain(model)
        #expect(recorder.events == ["start", "cancel"])
        #expect(model.items.isEmpty)

        // A cancelled load-more keeps what was loaded.
        proxy.gated = false
        model.load()
        recorder.wait(for: 5)
        proxy.gated = true
        model.load(more: true)
        #expect(model.isLoadingMore)
        proxy.waitForRequests(3)
        model.cancel()
        #expect(recorder.next(2, after: 5) == ["start", "cancel"])
        #expect(model.items.count == 2 && model.hasMore && !model.isLoadingMore)
        proxy.release(2)
    }

    @Test func failedLoadReportsTheProblemAndKeepsTheItems() throws {
        let bad = AlbumListModel(client: client, query: AlbumPageQuery(limit: 501))
        let recorder = Recorder()
        bad.addListener(recorder)
        bad.load()
        #expect(recorder.wait(for: 2) == ["start", "fail(400)"])
        #expect(!bad.isLoading && !bad.isLoaded)

        let proxy = try GatedProxy(upstreamPort: server.port)
        let (model, events) = makeModel(client: LiveServer.client(port: proxy.port, timeout: 0.5))
        model.load()
        events.wait(for: 3)
        let items = model.items
        proxy.gated = true  // the next answer never comes: a timeout
        model.load(more: true)
        #expect(events.next(2, after: 3) == ["start", "fail(no answer from the server within 0.5 s)"])
        #expect(model.items == items && model.hasMore && !model.isLoading)
        proxy.close()
    }

    @Test func listenersAreNotRetained() throws {
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
        model.load()
        kept.wait(for: 3)
        alive.wait(for: 3)
        #expect(log.all == ["alive:start", "alive:change", "alive:finish"])

        // A removed listener hears nothing more.
        model.removeListener(alive)
        model.load()
        kept.wait(for: 5)
        drain(model)
        #expect(alive.events.count == 3)
    }

    @Test func listenersAreCalledOnTheCallbackQueue() throws {
        let queue = DispatchQueue(label: "test.callbacks")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "mine")
        let model = AlbumListModel(client: client, query: AlbumPageQuery(limit: 2), callbackQueue: queue)
        final class QueueChecker: AlbumListModelListener, @unchecked Sendable {
            let key: DispatchSpecificKey<String>
            let done = DispatchSemaphore(value: 0)
            var onQueue: [Bool] = []  // only touched on the callback queue, then read after `done`
            init(key: DispatchSpecificKey<String>) { self.key = key }
            func didStartLoad(_ model: AlbumListModel) { onQueue.append(DispatchQueue.getSpecific(key: key) == "mine") }
            func didChange(_ model: AlbumListModel) { onQueue.append(DispatchQueue.getSpecific(key: key) == "mine") }
            func didFinishLoad(_ model: AlbumListModel) {
                onQueue.append(DispatchQueue.getSpecific(key: key) == "mine")
                done.signal()
            }
        }
        let checker = QueueChecker(key: key)
        model.addListener(checker)
        model.load()
        #expect(checker.done.wait(timeout: .now() + 10) == .success)
        #expect(checker.onQueue == [true, true, true])
    }

    // MARK: The load-while-loading rule

    @Test func aSecondResetJoinsTheRunningOne() throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        proxy.gated = true
        let (model, recorder) = makeModel(client: LiveServer.client(port: proxy.port))
        #expect(model.load() == .started)
        proxy.waitForRequests(1)
        #expect(model.load() == .joined)
        #expect(model.load(more: false) == .joined)
        proxy.release()
        #expect(recorder.wait(for: 3) == ["start", "change", "finish"])
        Thread.sleep(forTimeInterval: 0.2)
        drain(model)
        #expect(recorder.events.count == 3)
        #expect(proxy.requests.count == 1)  // one request for three calls
    }

    @Test func aMoreDuringAResetIsQueuedAndSentAfterIt() throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        proxy.gated = true
        let (model, recorder) = makeModel(client: LiveServer.client(port: proxy.port))
        #expect(model.load() == .started)
        proxy.waitForRequests(1)
        #expect(model.load(more: true) == .queued)  // nothing loaded yet, but the reset will tell
        #expect(model.load(more: true) == .queued)
        #expect(!model.isLoadingMore)
        proxy.release()
        #expect(proxy.waitForRequests(2))
        #expect(model.isLoadingMore)
        try #require(proxy.requests.count == 2)
        #expect(proxy.requests[1].target.contains("cursor="))
        proxy.release()
        #expect(recorder.wait(for: 6) == ["start", "change", "finish", "start", "change", "finish"])
        #expect(model.items.count == 4)
        #expect(proxy.requests.count == 2)
    }

    @Test func aQueuedMoreIsDroppedWhenTheResetIsCancelled() throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        proxy.gated = true
        let (model, recorder) = makeModel(client: LiveServer.client(port: proxy.port))
        model.load()
        proxy.waitForRequests(1)
        #expect(model.load(more: true) == .queued)
        model.cancel()
        proxy.release()
        Thread.sleep(forTimeInterval: 0.3)
        drain(model)
        #expect(recorder.events == ["start", "cancel"])
        #expect(proxy.requests.count == 1)
    }

    @Test func aSecondMoreJoinsTheRunningMore() throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        let (model, recorder) = makeModel(client: LiveServer.client(port: proxy.port))
        model.load()
        recorder.wait(for: 3)
        proxy.gated = true
        #expect(model.load(more: true) == .started)
        proxy.waitForRequests(2)
        #expect(model.load(more: true) == .joined)
        proxy.release()
        #expect(recorder.next(3, after: 3) == ["start", "change", "finish"])
        #expect(model.items.count == 4)
        #expect(proxy.requests.count == 2)
    }

    @Test func aResetDuringAMoreCancelsTheMoreAndStartsOver() throws {
        let proxy = try GatedProxy(upstreamPort: server.port)
        let (model, recorder) = makeModel(client: LiveServer.client(port: proxy.port))
        model.load()
        recorder.wait(for: 3)
        proxy.gated = true
        model.load(more: true)
        proxy.waitForRequests(2)
        #expect(model.load() == .started)
        #expect(model.isLoading && !model.isLoadingMore)
        proxy.waitForRequests(3)
        proxy.release(2)
        #expect(recorder.next(4, after: 3) == ["start", "cancel", "start", "finish"])  // 304: the first page is unchanged
        Thread.sleep(forTimeInterval: 0.2)
        drain(model)
        #expect(recorder.events.count == 7)
        #expect(model.items.count == 2 && model.hasMore)
    }
}
