import BlueLibraryClient
import Foundation
import HTTPTestSupport
import Synchronization

/// How long a model test waits for something to happen before it fails. Long, because it only
/// bounds a failing test: the model's tasks run on the cooperative pool (two threads here), which
/// the suite's blocking tests (PostgreSQL faults, several server processes) can hold for tens of
/// seconds; a 10 s wait failed that way once in five full runs.
let modelWait: Duration = .seconds(60)

/// The task's result, or nil when it has not finished within `timeout`: a call that never
/// returns (a cancellation that did not work) fails the test instead of hanging the suite.
func outcome<Success: Sendable>(of task: Task<Success, any Error>, within timeout: Duration = modelWait) async
    -> Result<Success, any Error>?
{
    let box = ResultBox<Success>()
    Task { box.set(await task.result) }
    _ = await eventually(timeout: timeout) { box.value != nil }
    return box.value
}

final class ResultBox<Success: Sendable>: Sendable {
    private let result = Mutex<Result<Success, any Error>?>(nil)
    func set(_ value: Result<Success, any Error>) { result.withLock { $0 = value } }
    var value: Result<Success, any Error>? { result.withLock { $0 } }
}

/// Waits until the model's callback queue has delivered everything queued so far.
func drain(_ model: AlbumListModel) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        model.callbackQueue.async { continuation.resume() }
    }
}

extension GatedProxy {
    /// Waits (suspending) until `count` requests have arrived in total.
    func requestsArrive(_ count: Int) async -> Bool { await eventually(timeout: modelWait) { requests.count >= count } }

    /// Waits (suspending) until `count` held requests were given up by their client.
    func hangUpsArrive(_ count: Int) async -> Bool { await eventually(timeout: modelWait) { hangUps >= count } }
}

extension LiveServer {
    /// Every album in library order, straight from the server (async calls).
    func albums() async throws -> [AlbumResource] {
        var query = AlbumPageQuery(limit: 500)
        var albums: [AlbumResource] = []
        while true {
            let page = try await client.list(query)
            albums += page.items
            guard let next = page.next else { return albums }
            query = query.continuing(at: next)
        }
    }
}

/// A listener that writes down every callback, for assertions on order.
final class Recorder: AlbumListModelListener, Sendable {
    private let log = Mutex<[String]>([])
    let name: String
    /// Shared with other recorders when set, to see the interleaving across listeners.
    let shared: SharedLog?

    init(name: String = "", shared: SharedLog? = nil) {
        self.name = name
        self.shared = shared
    }

    var events: [String] { log.withLock { $0 } }

    func didStartLoad(_ model: AlbumListModel) { record("start") }
    func didFinishLoad(_ model: AlbumListModel) { record("finish") }
    func didFailLoad(_ model: AlbumListModel, error: BlueLibraryClientError) { record("fail(\(error.status.map(String.init) ?? "\(error)"))") }
    func didCancelLoad(_ model: AlbumListModel) { record("cancel") }
    func didChange(_ model: AlbumListModel) { record("change") }

    private func record(_ event: String) {
        shared?.append(name.isEmpty ? event : "\(name):\(event)")
        log.withLock { $0.append(event) }
    }

    /// Waits until `count` events have been recorded in total (or `modelWait` passes) and returns them all.
    @discardableResult
    func wait(for count: Int) async -> [String] {
        _ = await eventually(timeout: modelWait) { events.count >= count }
        return events
    }

    /// Waits until the next `count` events after those seen so far arrive; returns just those.
    func next(_ count: Int, after seen: Int) async -> [String] {
        Array(await wait(for: seen + count).dropFirst(seen))
    }
}

final class SharedLog: Sendable {
    private let entries = Mutex<[String]>([])
    func append(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}
