import Foundation
import SQLite

/// A local copy of one library in a SQLite file: the app reads and edits it at once, with or
/// without the server, and `sync()` brings replica and server into exact agreement.
///
/// **Schema** (one file per replica, migrations by `SQLite.Migrator`):
/// - `base_albums(id, position, json, stale)`: the server's list as of `version` in `position`
///   order (an order key with gaps, not the index); `json` is the album as the server sent it; `stale` marks an album whose
///   fields must still be fetched (the change feed carries ids and indexes, not fields).
/// - `albums(id, position, json)`: what the app sees: `base_albums` with the outbox replayed
///   on top. Local edits change it at once.
/// - `outbox(seq, operation, idempotency_key, attempts)`: local mutations in order, each with
///   its own `Idempotency-Key` chosen when it was made (so a retry after a lost answer, even
///   after a restart of the app, sends the same key).
/// - `meta`: `library`, `version` (the server version `base_albums` is at), `loaded`.
///
/// **Pull** (`pull()`): the first time, and after `410 Gone` or a `replaced` change, a full
/// reload through the paged list (repeated until the first and last page have the same
/// version, so the copy is one state of the server). Otherwise `GET /changes?since=version`
/// page by page, applying each change to `base_albums` in order: `added` inserts at its index
/// (marked stale), `deleted` removes by id, `moved` moves by id to its index, `updated` marks
/// stale. Stale albums are then fetched (`GET /albums/{id}`, or a walk through the paged list
/// when there are more than `staleFetchLimit`); one that is gone by then means
/// more changes came in: the pull goes round again (at most `maxPullRounds`, then reloads).
/// Last, `albums` is rebuilt: `base_albums` plus the outbox replayed.
///
/// **Push** (`push()`): the outbox is sent oldest first, in batches of up to `pushBatchSize`
/// entries, each one `POST /batch` that is not atomic (every operation meets the conflict
/// rules below on its own) under an Idempotency-Key of its own: the batch's range and key are
/// kept in `meta` before it is sent, so after a lost answer or a restart the same entries go
/// again with the same key and the server answers the first result instead of applying them
/// twice. An operation on an album added earlier in the same batch names it by `ref`. A batch
/// the server refuses as a whole (a field it rejects) goes again one entry per request; a
/// move whose target is past the end is sent again alone after its batch. Transport
/// failures, timeouts, 409 (idempotency key in progress) and 5xx are retried with
/// exponential backoff (`retryDelay` doubling, `maxAttempts` in all); then the replica goes
/// offline and `push` throws, keeping the entry for the next sync. A locked server's 401 (no
/// token, or a wrong one: the client's `token`/`tokenProvider`) or 429 (locked out for
/// `retryAfter` seconds) stops the push at once with `.client(.unauthorized)` or
/// `.client(.tooManyRequests)`: that entry and every later one stay queued, untouched. A 409 that outlasts the
/// retries means the key was taken by a request that was interrupted (the server died
/// between taking it and recording the answer; it stays taken for 24 hours): after
/// `interruptedKeyGrace` the replica looks for the album on the server and adopts it, or
/// sends the add again under a new key (`resolveInterruptedAdd`). Only adds create, so only
/// adds need the server's idempotency keys: a retried `POST` with the entry's key answers the
/// first result and adds nothing. Deletes, moves and patches name the album by id and are
/// idempotent by themselves. When an add is answered, its local id is replaced by the
/// server's everywhere (the `albums` row and later outbox entries).
///
/// **Conflicts, per operation kind** (the server's state wins on order; the app's edits are
/// replayed on it):
/// - add: always applied, at its index clamped to the list's end at the time it is sent. A 422
///   (the server rejects the fields) drops it and reports it; later operations on its local id
///   are dropped with it.
/// - delete: an album the server already deleted (404) is a no-op, not reported as a failure.
/// - move: an album deleted on the server (404) is dropped and reported; a target index past
///   the end now (422) moves it to the last index.
/// - patch: a merge patch of only the fields the app set or cleared, sent without `If-Match`: a field
///   edit wins over an older one of the same field, and concurrent edits of different fields
///   both survive, so no 412 can arise. An album deleted on the server (404) drops the patch,
///   reported.
/// - Any other 4xx but 401 and 429 drops the operation, reported with the server's problem.
/// After a sync with an empty outbox, `albums` equals the server's list: same ids, same order,
/// same fields.
///
/// **Follow** (`follow()`, runs until its task is cancelled): live updates without polling. It
/// opens the library's event stream (`GET /events`, through `BlueLibraryClient.events`, which
/// hands over the body as it arrives: libcurl on Linux, a `URLSessionDataDelegate` elsewhere)
/// with `Last-Event-ID` = `version`, so events missed since the last pull come first. For each
/// event that changes the list (`album.added/updated/deleted/moved`, `library.replaced`,
/// `library.outdated`; not `state.changed`, cover or settings events) it runs the same pull as
/// `pull()`, unless `version` is already at the event's id (the version it belongs to): events
/// queued while a pull ran are mostly covered by it, so a burst costs one pull and at most one
/// more. The follower's pull keeps the one-at-a-time rule: while the app's `sync`, `push` or
/// `pull` runs, the follower waits for it to end (woken, not polling) and then pulls only if
/// still behind; while the follower's pull runs, the app's `sync`, `push` or `pull` waits for
/// it (a pull is short) instead of throwing `.busy`, and `undoLastPending` is allowed (a pull
/// leaves the outbox alone). A stream that ends or breaks (`server.shutdown`, a restart, the
/// network, `eventStreamIdleTimeout` without a heartbeat) is followed by a pull and a
/// reconnect, retried with backoff (`followRetryDelay` doubling up to `followMaxRetryDelay`)
/// for as long as the server stays away; 401, 429, 404 (the library was deleted) and a failing
/// file end `follow()` with that error, `setOnline(false)` with `.offline`. `updates()` tells
/// every reader the version after each pull (any pull) that changed the replica;
/// `AlbumListModel(replica:reloadsOnUpdates: true)` reloads on it.
///
/// **isOnline**: false after a request failed to reach the server (after its retries) or
/// after `setOnline(false)`; true again after any answer from the server. With
/// `setOnline(false)`, `sync`, `push` and `pull` throw `.offline` without sending anything;
/// local reads and edits work either way. Listeners hear every change of `isOnline`.
///
/// **A view's replica** (`init(path:client:view:)`): a read-only copy of a view's list
/// (`/views/{view}/albums`, every source library, each album with its `library`). Views have no
/// change feed of their own, so a pull asks for the view's first page with `If-None-Match` (the
/// view's ETag, which moves with the view's definition and every source's version: answered
/// 304 from the server's memory while nothing changed) and, when it moved, reloads the whole
/// list through the paged list (taken again until the first and last pages were read at the
/// same source versions). `version()` is then the sum of the source versions (it grows with
/// every change of any source). Writes (`add`, `delete`, `move`, `update`) throw `.readOnly`:
/// change the source libraries (with the client, or through their own replicas) and pull.
/// The source versions its copy was read at are kept in `meta` (`sources`, as `a:12,b:3`; a
/// file loaded before they were kept reloads once). `follow()` keeps it live: it asks the
/// view's sources (`GET /views/{view}`), opens one event stream over them (`GET
/// /events?library=a&library=b`, `Last-Event-ID` = that vector, so what changed since the
/// copy was read comes first), and for each event that changes a source's list runs the pull
/// above, unless the copy was read at or after every version in the event's id (so a burst
/// costs one pull, and a change the view's filter leaves out only a 304). A reload that shows
/// other sources (the view was redefined) reopens the stream over them; a view that is gone
/// ends `follow()` with its 404; the rest (drops, backoff, `.offline`, 401/429) is as for a
/// library. `albums()`, `page(_:)` and `AlbumListModel(replica:)` read it as any replica.
///
/// **Concurrency**: an actor. One `sync`, `push` or `pull` runs at a time (another throws
/// `.busy`; one that finds the follower's pull running waits for it, see "Follow"); local reads and edits go on during one (they interleave at its `await`s: a push
/// reads the next outbox entry afresh each time, and `albums` is rebuilt from the outbox as it
/// is when the pull ends).
public actor LibraryReplica {
    public nonisolated let client: BlueLibraryClient
    /// The library this replica copies; for a view's replica, the view's id.
    public nonisolated let library: String
    /// The view this replica copies (read-only), or nil for a library's replica.
    public nonisolated let view: String?
    public nonisolated let path: String
    /// Requests per outbox entry before `push` gives up for now (the entry stays queued).
    public var maxAttempts = 5
    /// The first retry's delay; each further retry waits twice as long.
    public var retryDelay: Duration = .milliseconds(50)
    /// Rounds of change pages and stale fetches before a pull reloads everything instead.
    public var maxPullRounds = 8
    /// Up to this many albums needing fields are fetched one by one (`GET /albums/{id}`); more
    /// are filled from a walk through the paged list.
    public var staleFetchLimit = 50
    /// How long a queued add's Idempotency-Key may stay held on the server (409, a request
    /// with it was interrupted) before the replica decides from the server's list whether it
    /// took effect (see `resolveInterruptedAdd`). Longer than any request runs, so a request
    /// that is merely slow is never taken for a dead one.
    public var interruptedKeyGrace: Duration = .seconds(60)
    /// Outbox entries sent together in one `POST /batch` (at most the server's 1,000).
    public var pushBatchSize = BlueLibraryClient.maxBatchOperations
    /// Adds resolved that way during the running push: adopted, sent again under a new key.
    var resolvedAdds = (adopted: 0, resent: 0)

    let store: ReplicaStore
    private var reachable = true
    var allowedOnline = true
    var syncing = false {
        didSet {
            guard !syncing, !syncEndWaiters.isEmpty else { return }
            let waiters = syncEndWaiters
            syncEndWaiters = []
            for waiter in waiters { waiter.resume() }
        }
    }
    /// Who waits for the running sync, push or pull to end (`untilSyncEnds`).
    var syncEndWaiters: [CheckedContinuation<Void, Never>] = []
    private var listeners: [UUID: @Sendable (Bool) -> Void] = [:]
    /// The running `follow()`'s loop (cancelled by `setOnline(false)`).
    var followTask: Task<Void, any Error>?
    /// The `syncing` pull running now is the follower's (a `sync`, `push` or `pull` waits for it).
    var followerPulling = false
    /// The `updates()` streams, told the version after every pull that changed the replica.
    var updateContinuations: [UUID: AsyncStream<Int64>.Continuation] = [:]
    /// `follow()`: the first delay before reconnecting a dropped event stream; each further
    /// failed attempt waits twice as long, up to `followMaxRetryDelay`.
    public var followRetryDelay: Duration = .milliseconds(100)
    public var followMaxRetryDelay: Duration = .seconds(5)

    /// Opens (creating) the replica of `library` at `path`. A file made for another library is
    /// refused. With `library` nil: the library the file holds, or the default library for a
    /// new file.
    public init(path: String, client: BlueLibraryClient, library: String? = AlbumListSource.defaultLibraryID) throws(ReplicaError) {
        try self.init(path: path, client: client, opening: .library(library))
    }

    /// Opens (creating) the read-only replica of the view `view` at `path` (see "A view's
    /// replica" above). A file made for a library, or for another view, is refused.
    public init(path: String, client: BlueLibraryClient, view: String) throws(ReplicaError) {
        try self.init(path: path, client: client, opening: .view(view))
    }

    private enum Opening {
        case library(String?)
        case view(String)
    }

    private init(path: String, client: BlueLibraryClient, opening: Opening) throws(ReplicaError) {
        self.client = client
        self.path = path
        do {
            store = try ReplicaStore(path: path)
            let held = (library: try store.meta("library"), view: try store.meta("view"))
            switch opening {
            case .library(let library):
                if let view = held.view {
                    throw ReplicaError.wrongSource(file: path, holds: "view \(view)", asked: "library \(library ?? held.library ?? AlbumListSource.defaultLibraryID)")
                }
                view = nil
                if let existing = held.library {
                    if let library, existing != library {
                        throw ReplicaError.wrongLibrary(file: path, holds: existing, asked: library)
                    }
                    self.library = existing
                } else {
                    self.library = library ?? AlbumListSource.defaultLibraryID
                    try store.setMeta("library", self.library)
                }
            case .view(let asked):
                if let library = held.library { throw ReplicaError.wrongSource(file: path, holds: "library \(library)", asked: "view \(asked)") }
                if let existing = held.view, existing != asked {
                    throw ReplicaError.wrongSource(file: path, holds: "view \(existing)", asked: "view \(asked)")
                }
                view = asked
                library = asked
                if held.view == nil { try store.setMeta("view", asked) }
            }
        } catch let error as ReplicaError {
            throw error
        } catch {
            throw .storage("\(path): \(error)")
        }
    }

    public func configure(maxAttempts: Int? = nil, retryDelay: Duration? = nil, staleFetchLimit: Int? = nil,
                          interruptedKeyGrace: Duration? = nil, pushBatchSize: Int? = nil,
                          followRetryDelay: Duration? = nil, followMaxRetryDelay: Duration? = nil) {
        if let followRetryDelay { self.followRetryDelay = followRetryDelay }
        if let followMaxRetryDelay { self.followMaxRetryDelay = followMaxRetryDelay }
        if let pushBatchSize { self.pushBatchSize = min(max(1, pushBatchSize), BlueLibraryClient.maxBatchOperations) }
        if let interruptedKeyGrace { self.interruptedKeyGrace = interruptedKeyGrace }
        if let maxAttempts { self.maxAttempts = max(1, maxAttempts) }
        if let staleFetchLimit { self.staleFetchLimit = max(0, staleFetchLimit) }
        if let retryDelay { self.retryDelay = retryDelay }
    }

    // MARK: - Reading

    /// The albums as the app sees them (local edits included), in order, each with its index.
    public func albums() throws(ReplicaError) -> [AlbumResource] {
        try storage { try store.albums(.local) }
    }

    /// The server version the replica last synced to (0 before the first load).
    public func version() throws(ReplicaError) -> Int64 {
        try storage { Int64(try store.meta("version") ?? "0") ?? 0 }
    }

    /// The local mutations not yet acknowledged by the server, oldest first.
    public func pending() throws(ReplicaError) -> [ReplicaOperation] {
        try storage { try store.outbox().map(\.operation) }
    }

    /// The `Idempotency-Key` of each queued mutation, oldest first (the key a retry sends).
    func idempotencyKeys() throws(ReplicaError) -> [String] {
        try storage { try store.outbox().map(\.idempotencyKey) }
    }

    /// Whether the replica has unsynced local changes (the model's `outdated`).
    public func hasPendingChanges() throws(ReplicaError) -> Bool {
        try storage { try store.outboxCount() > 0 }
    }

    // MARK: - Local mutations (applied at once, queued for the server)

    /// Adds an album at `index` (nil or past the end: appends) with a local id (`local-...`)
    /// until the server gives it its own at the next push.
    @discardableResult
    public func add(_ input: AlbumInput, at index: Int? = nil) throws(ReplicaError) -> AlbumResource {
        try refuseWritesToAView("add an album")
        let now = Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        let id = Self.localPrefix + UUID().uuidString.lowercased()
        var album = ReplicaOperation.localAlbum(id: id, input: input, createdAt: now)
        return try storage {
            try store.db.transaction(.immediate) { _ in
                album.index = try store.insert(.local, album, at: index)
                try store.enqueue(.add(localID: id, input: input, index: index, createdAt: now), key: UUID().uuidString)
            }
            return album
        }
    }

    /// Deletes the album with `id`; answers it as it was (with its index); `.notFound` when
    /// the replica does not hold it.
    @discardableResult
    public func delete(id: String) throws(ReplicaError) -> AlbumResource {
        try refuseWritesToAView("delete an album")
        return try storage {
            try store.db.transaction(.immediate) { _ in
                guard let album = try store.album(.local, id: id), try store.remove(.local, id: id) else { throw ReplicaError.notFound(id) }
                try store.enqueue(.delete(id: id), key: UUID().uuidString)
                return album
            }
        }
    }

    /// Moves the album with `id` to `index` (past the end: the last index); answers it at its
    /// new index.
    @discardableResult
    public func move(id: String, to index: Int) throws(ReplicaError) -> AlbumResource {
        try refuseWritesToAView("move an album")
        return try storage {
            try store.db.transaction(.immediate) { _ in
                guard try store.move(.local, id: id, to: index), let album = try store.album(.local, id: id) else {
                    throw ReplicaError.notFound(id)
                }
                try store.enqueue(.move(id: id, index: index), key: UUID().uuidString)
                return album
            }
        }
    }

    /// Changes the fields set in `patch`; answers the album as the app now sees it.
    @discardableResult
    public func update(id: String, _ patch: AlbumPatchInput) throws(ReplicaError) -> AlbumResource {
        try refuseWritesToAView("change an album")
        return try storage {
            try store.db.transaction(.immediate) { _ in
                guard let album = try store.album(.local, id: id) else { throw ReplicaError.notFound(id) }
                var changed = patch.applied(to: album)
                changed.index = nil
                try store.replaceFields(.local, changed)
                try store.enqueue(.update(id: id, patch: patch), key: UUID().uuidString)
                changed.index = album.index
                return changed
            }
        }
    }

    // MARK: - Online state

    /// Whether the server was reachable at the last request and the app allows the network.
    public var isOnline: Bool { reachable && allowedOnline }

    /// The explicit switch: `false` keeps `sync`, `push` and `pull` from sending anything.
    public func setOnline(_ online: Bool) {
        let before = isOnline
        allowedOnline = online
        if online { reachable = true } else { followTask?.cancel() }
        announce(before)
    }

    /// Calls `listener` (on the replica's executor) with every new value of `isOnline`;
    /// `removeOnlineListener` with the answer stops it.
    @discardableResult
    public func addOnlineListener(_ listener: @escaping @Sendable (Bool) -> Void) -> UUID {
        let token = UUID()
        listeners[token] = listener
        return token
    }

    public func removeOnlineListener(_ token: UUID) { listeners[token] = nil }

    func setReachable(_ value: Bool) {
        let before = isOnline
        reachable = value
        announce(before)
    }

    private func announce(_ before: Bool) {
        let now = isOnline
        guard now != before else { return }
        for listener in listeners.values { listener(now) }
    }

    // MARK: - Sync

    /// Pushes the outbox, then pulls the server's changes; afterwards, with nothing dropped
    /// or left queued, the replica equals the server. A view's replica only pulls.
    @discardableResult
    public func sync() async throws(ReplicaError) -> SyncReport {
        try await begin()
        defer { syncing = false }
        var report = view == nil ? try await pushOutbox() : SyncReport()
        let pulled = try await pullChanges()
        report.pulledChanges = pulled.pulledChanges
        report.reloaded = pulled.reloaded
        report.version = pulled.version
        return report
    }

    func storage<T>(_ body: () throws -> T) throws(ReplicaError) -> T {
        do {
            return try body()
        } catch let error as ReplicaError {
            throw error
        } catch {
            throw .storage("\(path): \(error)")
        }
    }

    /// Starts a sync, push or pull: only one at a time (the actor lets calls interleave at
    /// every `await`, and two pushes must not send the same entry side by side). A pull of the
    /// follower (`follow()`) is waited for, not refused: the app need not know that one runs.
    func begin() async throws(ReplicaError) {
        while syncing && followerPulling {
            await untilSyncEnds()
            if Task.isCancelled { throw .client(.cancelled) }
        }
        guard allowedOnline else { throw .offline }
        guard !syncing else { throw .busy }
        syncing = true
    }
}

extension LibraryReplica {
    /// Suspends until the running sync, push or pull ends (returns at once when none runs):
    /// woken when `syncing` goes false, not by polling.
    func untilSyncEnds() async {
        guard syncing else { return }
        await withCheckedContinuation { syncEndWaiters.append($0) }
    }
}

/// What one `sync`, `push` or `pull` did.
public struct SyncReport: Sendable, Hashable {
    /// Outbox entries the server applied (a delete of an album already gone counts here).
    public var pushed = 0
    /// Outbox entries dropped by the conflict rules, each with the reason.
    public var dropped: [DroppedOperation] = []
    /// Changes from the feed applied to the replica.
    public var pulledChanges = 0
    /// Whether the pull reloaded everything (first load, 410, `replaced`).
    public var reloaded = false
    /// The server version the replica is at afterwards.
    public var version: Int64 = 0
    /// Queued adds whose Idempotency-Key an interrupted request held (409) past
    /// `interruptedKeyGrace`: found on the server and adopted / not found and sent again under
    /// a new key.
    public var adoptedAdds = 0
    public var resentAdds = 0

    public init() {}
}

/// A local mutation the server would not take, and why.
public struct DroppedOperation: Sendable, Hashable {
    public var operation: ReplicaOperation
    public var reason: String
}

/// Everything a replica call can fail with.
public enum ReplicaError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `setOnline(false)` is in force: nothing was sent.
    case offline
    /// Another `sync`, `push` or `pull` of this replica is running (or, from `follow()`,
    /// another `follow()`); nothing was sent.
    case busy
    /// The server could not be reached or answered an error that is not a conflict.
    case client(BlueLibraryClientError)
    /// The replica file could not be read or written.
    case storage(String)
    /// The file is the replica of another library.
    case wrongLibrary(file: String, holds: String, asked: String)
    /// No album with this id in the replica.
    case notFound(String)
    /// The server's state kept changing under a reload or pull; try again.
    case unsettled(String)
    /// A queued add's Idempotency-Key is held on the server by a request that was interrupted
    /// (or is still running); a sync after `decidedAfter` settles it (see `interruptedKeyGrace`).
    case interruptedAdd(title: String, decidedAfter: Date)
    /// A cursor `page` did not give out (a server cursor, or a mistyped one).
    case invalidCursor(String)
    /// The replica of a view is read-only (`what` was asked of it).
    case readOnly(view: String, what: String)
    /// The file is the replica of another library or view (`holds` and `asked` say which:
    /// "library jazz", "view everything").
    case wrongSource(file: String, holds: String, asked: String)

    public var description: String {
        switch self {
        case .offline: "the replica is offline (setOnline(false)); nothing was sent"
        case .busy: "a sync (or a follow) of this replica is already running; nothing was sent"
        case let .client(error): error.description
        case let .storage(message): "the replica file failed: \(message)"
        case let .wrongLibrary(file, holds, asked): "\(file) is the replica of library \(holds), not \(asked)"
        case let .notFound(id): "no album \(id) in the replica"
        case let .unsettled(message): message
        case let .interruptedAdd(title, decidedAfter):
            "the server still holds the Idempotency-Key of the queued add of \"\(title)\": a request with it was interrupted "
                + "(the server stopped mid-write?) or is still running. Sync again after "
                + "\(decidedAfter.formatted(Date.ISO8601FormatStyle())): the replica then looks for the album on the server "
                + "and sends the add again under a new key if it is not there"
        case let .invalidCursor(cursor): "'\(cursor)' is not a cursor of this replica (they look like r20); start from the first page"
        case let .readOnly(view, what):
            "the replica of view \(view) is read-only, so it cannot \(what): change the album in its library (with the client, "
                + "or in that library's own replica), then pull() or sync() this one"
        case let .wrongSource(file, holds, asked): "\(file) is the replica of \(holds), not \(asked)"
        }
    }
}
