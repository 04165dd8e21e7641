import Foundation

/// Following the server live: the library's event stream (a view's: its sources' streams in
/// one) triggers pulls (rules in `LibraryReplica`'s note, "Follow").
extension LibraryReplica {
    /// Whether a `follow()` is running.
    public var isFollowing: Bool { followTask != nil }

    /// Keeps the replica at the server's version while it runs: listens to the library's event
    /// stream (`GET /events` with `Last-Event-ID` = `version()`) and pulls (`/changes?since=`)
    /// for every event that announces a change of the list, so another client's edit is here
    /// within about a second, without polling. Runs until the calling task is cancelled
    /// (returns), `setOnline(false)` (throws `.offline`), or an error no retry helps: 401 or 429
    /// (`.client(.unauthorized)` / `.client(.tooManyRequests)`), a library that is gone
    /// (`.client(.problem)` with 404), a replica file that fails (`.storage`). A dropped stream
    /// (server restart, network, 45 s without even a heartbeat) is followed by a pull and a
    /// reconnect, retried with backoff (`followRetryDelay` doubling up to `followMaxRetryDelay`)
    /// for as long as it takes. `.busy` when a `follow()` already runs. After `.offline`,
    /// `setOnline(true)` does not restart it: call `follow()` again.
    ///
    /// A view's replica follows the view's sources in one stream (`GET /events?library=a&library=b`,
    /// its sources as `GET /views/{id}` names them, `Last-Event-ID` = the source versions its
    /// copy was read at) and pulls (`pull()`: one revalidation of the view's first page, a
    /// reload when it moved) for every event that changes a source's list, unless its copy was
    /// read at or after the event's versions. A view that is gone ends it (`.client(.problem)`
    /// with 404); when a reload shows that the view's sources changed, the stream is opened again
    /// over the new ones.
    public func follow() async throws(ReplicaError) {
        guard allowedOnline else { throw .offline }
        guard followTask == nil else { throw .busy }
        // The loop is a task of its own so that `setOnline(false)` can cancel it (and with it
        // the stream's connection and a running pull) without cancelling the caller's task.
        let loop = Task { () async throws -> Void in try await self.runFollow() }
        followTask = loop
        defer { followTask = nil }
        let result = await withTaskCancellationHandler {
            await loop.result
        } onCancel: {
            loop.cancel()
        }
        if case let .failure(error as ReplicaError) = result { throw error }
    }

    /// The versions the replica reaches by pulls that changed it (any pull: `sync`, `pull`,
    /// `follow`), newest only when the reader lags. Ends when the reader stops iterating.
    public func updates() -> AsyncStream<Int64> {
        let (stream, continuation) = AsyncStream<Int64>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        updateContinuations[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.removeUpdates(id) }
        }
        return stream
    }

    private func removeUpdates(_ id: UUID) { updateContinuations[id] = nil }

    func announceUpdate(_ version: Int64) {
        for continuation in updateContinuations.values { continuation.yield(version) }
    }

    /// The events after which the list may differ (state, cover and settings events do not
    /// change it).
    static let listEvents: Set<String> = [
        "album.added", "album.updated", "album.deleted", "album.moved", "library.replaced", "library.outdated",
    ]

    private func runFollow() async throws(ReplicaError) {
        var delay = followRetryDelay
        var catchUp = try !hasLoaded()
        while try stillFollowing() {
            if catchUp {
                do {
                    try await followerPull(through: nil)
                    catchUp = false
                    delay = followRetryDelay
                } catch {
                    guard try stillFollowing() else { return }
                    guard Self.passes(error) else { throw error }
                    try await backOff(&delay)
                    continue
                }
            }
            var events = 0
            do {
                let (stream, sources) = try await followStream()
                for try await event in stream {
                    events += 1
                    delay = followRetryDelay
                    setReachable(true)
                    if event.event == "server.shutdown" { break }
                    guard Self.listEvents.contains(event.event) else { continue }
                    // `library.outdated`: the id is another state's; pull (reloads on 410) anyway.
                    try await followerPull(through: event.event == "library.outdated" ? nil : followTarget(event.id))
                    // A view whose sources changed: the stream over the new ones.
                    if let sources, case let read = try sourcesRead(), !read.isEmpty, Set(read.keys) != Set(sources) { break }
                }
            } catch let error as ReplicaError {
                guard try stillFollowing() else { return }
                guard Self.passes(error) else { throw error }
            } catch let error as BlueLibraryClientError {
                guard try stillFollowing() else { return }
                guard Self.passes(.client(error)) else { throw .client(error) }
                if error.status == nil { setReachable(false) }
            } catch {
                throw .client(.transport(code: URLError.unknown.rawValue, message: "the event stream failed: \(error)"))
            }
            // The stream ended or broke: what it would have announced comes from a pull first.
            catchUp = true
            if events == 0 { try await backOff(&delay) }
        }
    }

    /// The stream `follow()` listens to: the library's, resuming after `version`; for a view,
    /// its sources' in one, resuming after the versions its copy was read at (with the
    /// sources, to see them change).
    private func followStream() async throws(ReplicaError) -> (AsyncThrowingStream<ServerSentEvent, any Error>, sources: [String]?) {
        guard let view else { return (client.events(in: library, lastEventID: String(try version())), nil) }
        let sources: [String]
        do {
            sources = try await retrying { () async throws(BlueLibraryClientError) -> [String] in
                try await self.client.view(view).sources
            }
        } catch {
            throw .client(error)
        }
        return (client.events(inLibraries: sources, lastEventID: Self.vector(try sourcesRead())), sources)
    }

    /// What an event says the replica must have reached for its pull to be skipped: the
    /// library's version (the event's id), or for a view every source's version in the id's
    /// vector. Nil (pull) when the id says neither.
    private func followTarget(_ id: String) -> FollowTarget? {
        if view == nil { return Int64(id).map(FollowTarget.version) }
        let versions = Self.parseVector(id)
        return versions.isEmpty ? nil : .sources(versions)
    }

    enum FollowTarget {
        case version(Int64)
        case sources([String: Int64])
    }

    private func reached(_ target: FollowTarget) throws(ReplicaError) -> Bool {
        switch target {
        case let .version(version):
            return try self.version() >= version
        case let .sources(versions):
            let read = try sourcesRead()
            return versions.allSatisfy { library, version in (read[library] ?? Int64.min) >= version }
        }
    }

    /// False when the follow task was cancelled; throws `.offline` after `setOnline(false)`.
    private func stillFollowing() throws(ReplicaError) -> Bool {
        guard allowedOnline else { throw .offline }
        return !Task.isCancelled
    }

    /// Whether following goes on after `error` (a later attempt may pass): transport
    /// failures, timeouts, 5xx, a server whose list kept changing. Not 401, 429, 404 or
    /// anything local.
    static func passes(_ error: ReplicaError) -> Bool {
        switch error {
        case .unsettled: return true
        case let .client(error):
            switch error {
            case .transport, .timeout, .decoding: return true
            case let .problem(problem): return problem.status >= 500 || problem.status == 408
            default: return false
            }
        default: return false
        }
    }

    private func backOff(_ delay: inout Duration) async throws(ReplicaError) {
        do {
            try await Task.sleep(for: delay)
        } catch {
            _ = try stillFollowing()
            return
        }
        delay = min(delay * 2, followMaxRetryDelay)
    }

    /// The follower's pull, under the one-at-a-time rule: skipped when the replica is already
    /// at `target` (the event's version, or a view's source versions: a pull since it arrived,
    /// or this replica's own push, brought it); while the app's `sync`, `push` or `pull` runs, waits for it to end and then
    /// pulls only if the replica is still behind.
    private func followerPull(through target: FollowTarget?) async throws(ReplicaError) {
        while true {
            if let target, try reached(target) { return }
            guard syncing else { break }
            await untilSyncEnds()
            if Task.isCancelled { throw .client(.cancelled) }
        }
        guard allowedOnline else { throw .offline }
        syncing = true
        followerPulling = true
        defer {
            syncing = false
            followerPulling = false
        }
        _ = try await pullChanges()
    }
}
