import Dispatch
import Foundation
import Synchronization

/// Told about an `AlbumListModel`'s loads and changes. Every method has an empty default, so a
/// listener implements only what it needs. Calls arrive on the model's `callbackQueue`, one at
/// a time, in the order the model's state changed.
///
/// Listeners are not retained by the model (TTModel's non-retaining "delegates"): a listener
/// that is released is simply no longer told anything, and need not remove itself.
public protocol AlbumListModelListener: AnyObject, Sendable {
    /// A request went out (a first page, or the next page; see `isLoadingMore`).
    func didStartLoad(_ model: AlbumListModel)
    /// The request finished: new items were taken in, or the server answered 304 and the items
    /// held are current.
    func didFinishLoad(_ model: AlbumListModel)
    /// The request failed; the items held are unchanged.
    func didFailLoad(_ model: AlbumListModel, error: BlueLibraryClientError)
    /// The running request was cancelled (`cancel()`, `invalidate(erase: true)`, a reset that
    /// superseded a running `load(more: true)`, or the cancelled task of a `loadAndWait` call).
    func didCancelLoad(_ model: AlbumListModel)
    /// `items` changed: replaced by a new first page, appended to by a next page, or dropped by
    /// `invalidate(erase: true)`. Sent before the `didFinishLoad` of the load that changed them.
    func didChange(_ model: AlbumListModel)
}

extension AlbumListModelListener {
    public func didStartLoad(_ model: AlbumListModel) {}
    public func didFinishLoad(_ model: AlbumListModel) {}
    public func didFailLoad(_ model: AlbumListModel, error: BlueLibraryClientError) {}
    public func didCancelLoad(_ model: AlbumListModel) {}
    public func didChange(_ model: AlbumListModel) {}
}

/// A paged album list as a model with explicit state, after Three20's `TTModel`.
///
/// **Source.** The list of one library (the default library unless told) or of a composite
/// view (`source: .view("everything")`): the same paging, ETags and cursors either way. A view's
/// page is current while none of its sources changed; a change in any of them outdates it.
///
/// **State.** Four flags that may combine (loaded *and* loading more, loaded *and* outdated):
/// - `isLoaded`: a first page has been taken in, so `items` is real data (it stays true while a
///   reload runs, and only `invalidate(erase: true)` makes it false again).
/// - `isLoading`: a request is running (a first page or a next page).
/// - `isLoadingMore`: the running request is for the next page.
/// - `isOutdated`: the items may no longer match the library: `invalidate` was called, a next
///   page was read at a newer library version than the first page (for a view: a newer version
///   of any source), or the server refused the next-page cursor because the walk expired (410:
///   too much changed meanwhile; the load fails and only a reload continues). A successful
///   `load(more: false)` clears it (unless `invalidate` was called while that load ran).
///
/// **Loading.** `load(more: false)` reloads from the first page. It keeps the items until the
/// answer arrives and sends the first page's `ETag` as `If-None-Match`: a 304 means the
/// library is at the same version, so every item and the next-page cursor are kept and only
/// `didFinishLoad` is sent; a 200 replaces the items with the first page (`didChange`, then
/// `didFinishLoad`). `load(more: true)` fetches the page at the `next` cursor and appends it.
/// Each request is one `Task` running the client's `async` `list(_:ifNoneMatch:)`, owned by the
/// model: `cancel()` (and everything below that cancels a load) cancels that task, which aborts
/// the transfer at once.
///
/// **A load while a load is running** is never silently dropped; the returned `LoadDisposition`
/// says what happened:
///
/// | call                | running: nothing | running: first page (reset) | running: next page (more) |
/// |---------------------|------------------|-----------------------------|---------------------------|
/// | `load(more: false)` | `.started`       | `.joined`                   | `.started`: the next-page load is cancelled (`didCancelLoad`), then the reset starts |
/// | `load(more: true)`  | `.started`, or `.noMorePages` when `hasMore` is false | `.queued`: sent when the reset succeeds, if there is still a next page | `.joined` |
///
/// A joined call gets the running request's outcome (no second `didStartLoad`, one
/// `didFinishLoad`). A queued next-page load is dropped if the reset fails or is cancelled
/// (listeners already hear `didFailLoad`/`didCancelLoad` for it), and starts with its own
/// `didStartLoad` after the reset's `didFinishLoad` otherwise.
///
/// **Waiting in `async` code.** `loadAndWait(more:)` is `load(more:)` that then suspends until
/// the load it started, joined or queued has ended, and throws its error (`.cancelled` when it
/// was cancelled). It returns after every listener has been told of that end. Cancelling the
/// waiting task cancels that load, as `cancel()` does (listeners hear `didCancelLoad`; a caller
/// joined to the same load gets `.cancelled` too).
///
/// **On a replica.** `init(replica:query:)` makes the model read a `LibraryReplica` instead of
/// the server: every load pages through the replica's albums (local edits included; `page` of
/// the replica filters and sorts as the server does), so it works offline. `isFromReplica` is
/// true; a load never answers 304 (there is no ETag) and `isOutdated` is true after a load while
/// the replica holds local edits not yet synced (`hasPendingChanges`), false once they are. The
/// model does not sync: the app calls the replica's `sync()` and then `load()` again (also after
/// a local edit; a load from the replica is a local read). Made with `reloadsOnUpdates: true`,
/// the model does that second step itself: once loaded, it loads its first page again after
/// every pull that changed the replica (the app's `sync()`, or the replica's `follow()` bringing
/// another client's change), as `load()` does (a next page being loaded is cancelled by it).
///
/// **Isolation.** Not an actor and not `@MainActor`: a `final class` whose whole state sits behind
/// one `Mutex`, so it is `Sendable` and every member may be used from any thread or task. Reads
/// (`items`, `snapshot`, the flags) are synchronous, so a UI can read the model inside a
/// callback or a table's data source without `await`; commands (`load`, `cancel`, `invalidate`)
/// never block or suspend, they change the state and start or cancel the request's task.
/// Listener callbacks run on `callbackQueue` (a private serial queue unless one is given, e.g.
/// `.main` in an app that runs the main queue), one at a time, in the order the state changed.
/// A callback reads the model's *current* state, which may already be ahead of the event if
/// other threads call the model meanwhile.
public final class AlbumListModel: Sendable {
    /// What `load(more:)` did with the call.
    public enum LoadDisposition: Sendable, Hashable {
        /// A request went out; `didStartLoad` follows.
        case started
        /// The identical request was already running; this call shares its outcome.
        case joined
        /// `load(more: true)` while the first page loads: sent once that load succeeds.
        case queued
        /// `load(more: true)` with no next page (the end was reached, or nothing is loaded):
        /// nothing is sent and no listener is told.
        case noMorePages
    }

    /// A consistent view of the whole state at one moment.
    public struct Snapshot: Sendable, Hashable {
        public var items: [AlbumResource]
        public var isLoaded: Bool
        public var isLoading: Bool
        public var isLoadingMore: Bool
        public var isOutdated: Bool
        /// The cursor of the next page; nil at the end or before the first load.
        public var next: String?
        /// The library version of the first page held (for a view: see `AlbumPageResource.version`).
        public var version: Int64?
        /// A view's first page: each source library's version (nil for a library's list).
        public var versions: [String: Int64]?
        /// The number of matching albums, when the query asks for `count`.
        public var total: Int?
        /// The first page's ETag, sent as `If-None-Match` on the next `load(more: false)`.
        public var etag: String?
        /// When the first page was last loaded or revalidated.
        public var loadedAt: Date?
        /// The items came from a `LibraryReplica` (the model was made with `init(replica:)`).
        public var isFromReplica: Bool
        public var hasMore: Bool { next != nil }
    }

    public let client: BlueLibraryClient
    /// The replica the model reads instead of the server (`init(replica:)`), else nil.
    public let replica: LibraryReplica?
    /// The library or view whose list this is.
    public let source: AlbumListSource
    /// The list's query: page size, order and filters. Its cursor is ignored (the model pages itself).
    public let query: AlbumPageQuery
    /// Where listener callbacks run.
    public let callbackQueue: DispatchQueue
    private let state: Mutex<State>

    public convenience init(client: BlueLibraryClient, source: AlbumListSource = .defaultLibrary, query: AlbumPageQuery = AlbumPageQuery(),
                            callbackQueue: DispatchQueue? = nil) {
        self.init(client: client, replica: nil, source: source, query: query, callbackQueue: callbackQueue)
    }

    /// A model of `replica`'s albums: loads read the replica, never the server (see "On a replica").
    /// With `reloadsOnUpdates`, a loaded model loads its first page again after every pull that
    /// changed the replica (`LibraryReplica.updates()`), so with `follow()` running another
    /// client's edit reaches `items` and the listeners (`didChange`) within about a second.
    public convenience init(replica: LibraryReplica, query: AlbumPageQuery = AlbumPageQuery(), callbackQueue: DispatchQueue? = nil,
                            reloadsOnUpdates: Bool = false) {
        let source = replica.view.map(AlbumListSource.view) ?? .library(replica.library)
        self.init(client: replica.client, replica: replica, source: source, query: query, callbackQueue: callbackQueue)
        if reloadsOnUpdates { observe(replica) }
    }

    private init(client: BlueLibraryClient, replica: LibraryReplica?, source: AlbumListSource, query: AlbumPageQuery,
                 callbackQueue: DispatchQueue?) {
        self.client = client
        self.replica = replica
        self.source = source
        var query = query
        query.cursor = nil
        self.query = query
        self.callbackQueue = callbackQueue ?? DispatchQueue(label: "BlueLibraryClient.AlbumListModel.callbacks")
        state = Mutex(State(isFromReplica: replica != nil))
    }

    deinit {
        state.withLock { $0.running?.task.cancel() }
        observation.withLock { $0?.cancel() }
    }

    /// `reloadsOnUpdates`: the task that reloads after each update of the replica (it holds
    /// the model weakly; cancelled when the model goes, which ends its `updates()` stream).
    private let observation = Mutex<Task<Void, Never>?>(nil)

    private func observe(_ replica: LibraryReplica) {
        let task = Task { [weak self] in
            for await _ in await replica.updates() {
                guard let self else { return }
                guard self.isLoaded else { continue }
                // A load that was already running may have read the replica before the pull:
                // joined to it, load once more after it.
                if (try? await self.loadAndWait()) == .joined { _ = try? await self.loadAndWait() }
            }
        }
        observation.withLock { $0 = task }
    }

    // MARK: - State

    public var snapshot: Snapshot { state.withLock { $0.snapshot } }
    public var items: [AlbumResource] { state.withLock { $0.items } }
    public var isLoaded: Bool { state.withLock { $0.loadedAt != nil } }
    public var isLoading: Bool { state.withLock { $0.running != nil } }
    public var isLoadingMore: Bool { state.withLock { $0.running?.more == true } }
    public var isOutdated: Bool { state.withLock { $0.isOutdated } }
    /// Whether the model reads a `LibraryReplica` rather than the server.
    public var isFromReplica: Bool { replica != nil }
    /// Whether a next page exists (false before the first load and at the end).
    public var hasMore: Bool { state.withLock { $0.next != nil } }
    /// The `loadAndWait` calls suspended now (for tests: a call has provably registered).
    var waitingCalls: Int { state.withLock { $0.waiters.count } }

    // MARK: - Listeners

    /// Adds a listener, held weakly. Adding one twice has no effect.
    public func addListener(_ listener: any AlbumListModelListener) {
        state.withLock { state in
            state.listeners.removeAll { $0.value == nil }
            if !state.listeners.contains(where: { $0.value === listener }) { state.listeners.append(WeakListener(value: listener)) }
        }
    }

    public func removeListener(_ listener: any AlbumListModelListener) {
        state.withLock { state in state.listeners.removeAll { $0.value == nil || $0.value === listener } }
    }

    // MARK: - Commands

    /// Loads the first page (`more: false`, revalidating what is held) or the next page
    /// (`more: true`, appended). See the type's documentation for what happens while a load
    /// is running; the result says which case applied. Returns at once.
    @discardableResult
    public func load(more: Bool = false) -> LoadDisposition {
        state.withLock { state in request(more: more, &state) }
    }

    /// `load(more:)`, then suspends until the load this call started, joined or queued has ended
    /// and every listener has been told. Throws that load's error, `.cancelled` when it was
    /// cancelled (by `cancel()`, a reset that superseded it, `invalidate(erase: true)`, or this
    /// task's cancellation, which cancels the load).
    @discardableResult
    public func loadAndWait(more: Bool = false) async throws(BlueLibraryClientError) -> LoadDisposition {
        if Task.isCancelled { throw .cancelled }
        let registration = WaitRegistration()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<LoadDisposition, BlueLibraryClientError>, Never>) in
                let id = state.withLock { state -> Int? in
                    let disposition = request(more: more, &state)
                    guard disposition != .noMorePages, let running = state.running else {
                        continuation.resume(returning: .success(disposition))
                        return nil
                    }
                    state.lastWaiterID += 1
                    state.waiters.append(Waiter(id: state.lastWaiterID, token: running.token, followsQueuedMore: disposition == .queued,
                                                disposition: disposition, continuation: continuation))
                    return state.lastWaiterID
                }
                if let id, registration.register(id) { abandonWait(id) }
            }
        } onCancel: {
            if let id = registration.cancel() { abandonWait(id) }
        }
        return try result.get()
    }

    /// Cancels the running load and any queued next-page load; the items are kept. Listeners
    /// hear `didCancelLoad`. Returns false (and tells nobody) when nothing was running.
    @discardableResult
    public func cancel() -> Bool {
        state.withLock { state in cancelRunning(&state) }
    }

    /// Marks the model outdated, so the next `load(more: false)` is known to be needed (it still
    /// revalidates, and a 304 keeps the items). With `erase`, the items, cursor and stored
    /// ETag are dropped as well (`isLoaded` becomes false, the next load is a full 200), a
    /// running load is cancelled (`didCancelLoad`), and `didChange` is sent if there were items.
    public func invalidate(erase: Bool = false) {
        state.withLock { state in
            state.invalidations += 1
            state.isOutdated = true
            guard erase else { return }
            cancelRunning(&state)
            let hadItems = !state.items.isEmpty
            state.items = []
            state.next = nil
            state.etag = nil
            state.version = nil
            state.versions = nil
            state.total = nil
            state.loadedAt = nil
            if hadItems { emit(.change, &state) }
        }
    }

    // MARK: - Machinery

    private struct State {
        var items: [AlbumResource] = []
        var next: String?
        var etag: String?
        var version: Int64?
        var versions: [String: Int64]?
        var total: Int?
        var loadedAt: Date?
        var isOutdated = false
        var running: Running?
        var queuedMore = false
        var invalidations = 0
        var lastToken = 0
        var listeners: [WeakListener] = []
        var waiters: [Waiter] = []
        var lastWaiterID = 0
        let isFromReplica: Bool

        var snapshot: Snapshot {
            Snapshot(items: items, isLoaded: loadedAt != nil, isLoading: running != nil, isLoadingMore: running?.more == true,
                     isOutdated: isOutdated, next: next, version: version, versions: versions, total: total, etag: etag,
                     loadedAt: loadedAt, isFromReplica: isFromReplica)
        }
    }

    private struct Running {
        let token: Int
        let more: Bool
        /// `invalidations` when the load began: a reset clears `isOutdated` only if it is unchanged.
        let invalidations: Int
        let sentETag: String?
        /// Runs the request and hands its result to `finish`; cancelling it aborts the transfer.
        let task: Task<Void, Never>
    }

    /// A `loadAndWait` call suspended until the load `token` ends.
    private struct Waiter {
        let id: Int
        var token: Int
        /// The call was `.queued`: when the reset `token` succeeds, it waits for the next-page
        /// load that starts then.
        var followsQueuedMore: Bool
        let disposition: LoadDisposition
        let continuation: CheckedContinuation<Result<LoadDisposition, BlueLibraryClientError>, Never>
    }

    private struct WeakListener: Sendable {
        weak var value: (any AlbumListModelListener)?
    }

    private enum Event: Sendable {
        case start, finish, fail(BlueLibraryClientError), cancel, change
    }

    /// The load-while-loading rule (see the type's table), applied under the lock.
    private func request(more: Bool, _ state: inout State) -> LoadDisposition {
        switch (more, state.running?.more) {
        case (false, false?), (true, true?):
            return .joined
        case (true, false?):
            state.queuedMore = true
            return .queued
        case (false, true?):
            cancelRunning(&state)
            begin(more: false, &state)
            return .started
        case (true, nil):
            guard state.next != nil else { return .noMorePages }
            begin(more: true, &state)
            return .started
        case (false, nil):
            begin(more: false, &state)
            return .started
        }
    }

    /// Registers a load as running and starts its task (which cannot run before the lock is
    /// released: `Task.init` only enqueues it).
    private func begin(more: Bool, _ state: inout State) {
        var pageQuery = query
        var etag: String?
        if more {
            guard let next = state.next else { return }
            pageQuery = query.continuing(at: next)
        } else {
            state.queuedMore = false
            etag = state.loadedAt != nil ? state.etag : nil
        }
        state.lastToken += 1
        let token = state.lastToken
        let client = self.client
        let source = self.source
        let replica = self.replica
        let task = Task { [weak self] in
            let result: Result<Revalidated<AlbumPage>, BlueLibraryClientError>
            var pending: Bool?
            if let replica {
                do throws(ReplicaError) {
                    let page = try await replica.page(pageQuery)
                    pending = try await replica.hasPendingChanges()
                    result = Task.isCancelled ? .failure(.cancelled) : .success(.modified(page))
                } catch {
                    result = .failure(.replica(error.description))
                }
            } else {
                do throws(BlueLibraryClientError) {
                    result = .success(try await client.list(pageQuery, in: source, ifNoneMatch: etag))
                } catch {
                    result = .failure(error)
                }
            }
            self?.finish(token: token, result, pending: pending)
        }
        state.running = Running(token: token, more: more, invalidations: state.invalidations, sentETag: etag, task: task)
        emit(.start, &state)
    }

    /// Cancels the running load (its task, so the transfer is aborted) and a queued next page.
    @discardableResult
    private func cancelRunning(_ state: inout State) -> Bool {
        guard let running = state.running else { return false }
        running.task.cancel()
        state.running = nil
        state.queuedMore = false
        emit(.cancel, &state)
        settle(running.token, .failure(.cancelled), &state)
        return true
    }

    /// `pending`: for a load from a replica, whether it holds unsynced edits (the model is outdated then).
    private func finish(token: Int, _ result: Result<Revalidated<AlbumPage>, BlueLibraryClientError>, pending: Bool? = nil) {
        state.withLock { state in
            guard let running = state.running, running.token == token else { return }  // cancelled or superseded
            state.running = nil
            let outcome: Result<Void, BlueLibraryClientError>
            switch result {
            case let .failure(error):
                state.queuedMore = false
                // 410: the cursor's walk expired (too much changed since); only a reload goes on.
                if running.more, error.status == 410 { state.isOutdated = true }
                emit(error == .cancelled ? .cancel : .fail(error), &state)
                outcome = .failure(error)
            case .success(.notModified) where running.more || running.sentETag == nil:
                state.queuedMore = false
                let error = BlueLibraryClientError.decoding(status: 304, message: "304 Not Modified for a request without If-None-Match")
                emit(.fail(error), &state)
                outcome = .failure(error)
            case .success(.notModified):
                state.loadedAt = Date()
                if state.invalidations == running.invalidations { state.isOutdated = false }
                emit(.finish, &state)
                outcome = .success(())
            case let .success(.modified(page)) where running.more:
                state.items += page.items
                state.next = page.next
                if let total = page.total { state.total = total }
                if let version = state.version, page.version != version { state.isOutdated = true }
                if let versions = state.versions, let pageVersions = page.versions, pageVersions != versions { state.isOutdated = true }
                if !page.items.isEmpty { emit(.change, &state) }
                emit(.finish, &state)
                outcome = .success(())
            case let .success(.modified(page)):
                let changed = state.items != page.items || state.loadedAt == nil
                state.items = page.items
                state.next = page.next
                state.etag = page.etag
                state.version = page.version
                state.versions = page.versions
                state.total = page.total
                state.loadedAt = Date()
                if state.invalidations == running.invalidations { state.isOutdated = false }
                if changed { emit(.change, &state) }
                emit(.finish, &state)
                outcome = .success(())
            }
            if pending == true, case .success = outcome { state.isOutdated = true }
            // A first page is in: send the next-page load that was queued behind it.
            if state.queuedMore {
                state.queuedMore = false
                if state.next != nil { begin(more: true, &state) }
            }
            settle(token, outcome, &state)
        }
    }

    /// The load `token` ended with `outcome`: resumes the calls waiting for it, after the
    /// callbacks queued so far. A queued next-page call whose reset succeeded waits on for the
    /// next-page load, if one started then.
    private func settle(_ token: Int, _ outcome: Result<Void, BlueLibraryClientError>, _ state: inout State) {
        let followUp = state.running.flatMap { $0.more && $0.token != token ? $0.token : nil }
        var ended: [Waiter] = []
        state.waiters.removeAll { waiter in
            guard waiter.token == token else { return false }
            ended.append(waiter)
            return true
        }
        var results: [(CheckedContinuation<Result<LoadDisposition, BlueLibraryClientError>, Never>, Result<LoadDisposition, BlueLibraryClientError>)] = []
        for var waiter in ended {
            if case .success = outcome, waiter.followsQueuedMore, let followUp {
                waiter.token = followUp
                waiter.followsQueuedMore = false
                state.waiters.append(waiter)
            } else {
                results.append((waiter.continuation, outcome.map { waiter.disposition }))
            }
        }
        guard !results.isEmpty else { return }
        callbackQueue.async { [results] in
            for (continuation, result) in results { continuation.resume(returning: result) }
        }
    }

    /// A `loadAndWait` call's task was cancelled: cancel the load it waits for.
    private func abandonWait(_ id: Int) {
        state.withLock { state in
            guard let waiter = state.waiters.first(where: { $0.id == id }) else { return }  // already resumed
            if state.running?.token == waiter.token {
                cancelRunning(&state)
            } else {
                state.waiters.removeAll { $0.id == id }
                callbackQueue.async { waiter.continuation.resume(returning: .failure(.cancelled)) }
            }
        }
    }

    /// Queues `event` for the listeners. Called with the lock held, so callbacks keep the order
    /// of the state changes; the listeners are looked up when the callback runs, so one released
    /// in between is not called.
    private func emit(_ event: Event, _ state: inout State) {
        callbackQueue.async { [self] in
            let listeners = self.state.withLock { state in
                state.listeners.removeAll { $0.value == nil }
                return state.listeners.compactMap(\.value)
            }
            for listener in listeners {
                switch event {
                case .start: listener.didStartLoad(self)
                case .finish: listener.didFinishLoad(self)
                case let .fail(error): listener.didFailLoad(self, error: error)
                case .cancel: listener.didCancelLoad(self)
                case .change: listener.didChange(self)
                }
            }
        }
    }
}

/// Connects a `loadAndWait` call's registration with its task's cancellation, which may come
/// first (from another thread).
private final class WaitRegistration: Sendable {
    private let state = Mutex<(id: Int?, cancelled: Bool)>((nil, false))

    /// Records the waiter's id; true when the task was already cancelled.
    func register(_ id: Int) -> Bool {
        state.withLock { state in
            state.id = id
            return state.cancelled
        }
    }

    /// Records the cancellation; the waiter's id when it is already registered.
    func cancel() -> Int? {
        state.withLock { state in
            state.cancelled = true
            return state.id
        }
    }
}
