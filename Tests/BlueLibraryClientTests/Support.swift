import BlueLibraryClient
import BlueLibraryTestSupport
import Foundation

@testable import BlueLibraryServer

/// The real app on a free port (seeded with the tutorial's five albums) and a client for it.
final class LiveServer: @unchecked Sendable {
    let app: BlueLibraryApp
    let client: BlueLibraryClient
    var port: Int { app.port }
    var url: String { "http://127.0.0.1:\(app.port)" }

    init(timeout: Double = 10) throws {
        app = try TestApp.make()
        app.start()
        client = BlueLibraryClient(baseURL: URL(string: "http://127.0.0.1:\(app.port)")!, timeout: timeout)
    }

    deinit { app.shutdown() }

    /// A client for another port (a proxy in front of this server, or nothing at all).
    static func client(port: Int, timeout: Double = 10) -> BlueLibraryClient {
        BlueLibraryClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!, timeout: timeout)
    }

    /// Every album in library order, straight from the server.
    func allAlbums() throws -> [AlbumResource] {
        var query = AlbumPageQuery(limit: 500)
        var albums: [AlbumResource] = []
        while true {
            let page = try client.list(query)
            albums += page.items
            guard let next = page.next else { return albums }
            query = query.continuing(at: next)
        }
    }
}

/// A listener that writes down every callback, for assertions on order.
final class Recorder: AlbumListModelListener, @unchecked Sendable {
    // `log` is guarded by `condition`.
    private let condition = NSCondition()
    private var log: [String] = []
    let name: String
    /// Shared with other recorders when set, to see the interleaving across listeners.
    let shared: SharedLog?

    init(name: String = "", shared: SharedLog? = nil) {
        self.name = name
        self.shared = shared
    }

    var events: [String] { condition.withLock { log } }

    func didStartLoad(_ model: AlbumListModel) { record("start") }
    func didFinishLoad(_ model: AlbumListModel) { record("finish") }
    func didFailLoad(_ model: AlbumListModel, error: BlueLibraryClientError) { record("fail(\(error.status.map(String.init) ?? "\(error)"))") }
    func didCancelLoad(_ model: AlbumListModel) { record("cancel") }
    func didChange(_ model: AlbumListModel) { record("change") }

    private func record(_ event: String) {
        shared?.append(name.isEmpty ? event : "\(name):\(event)")
        condition.withLock {
            log.append(event)
            condition.broadcast()
        }
    }

    /// Waits until `count` events have been recorded in total and returns them all.
    @discardableResult
    func wait(for count: Int, timeout: Double = 10) -> [String] {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while log.count < count {
            if !condition.wait(until: deadline) { break }
        }
        return log
    }

    /// Waits until the next `count` events after those seen so far arrive; returns just those.
    func next(_ count: Int, after seen: Int, timeout: Double = 10) -> [String] {
        Array(wait(for: seen + count, timeout: timeout).dropFirst(seen))
    }

    func clear() { condition.withLock { log.removeAll() } }
}

final class SharedLog: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [String] = []
    func append(_ entry: String) { lock.withLock { entries.append(entry) } }
    var all: [String] { lock.withLock { entries } }
}

/// Waits for the model's callback queue to drain (everything queued so far has been delivered).
func drain(_ model: AlbumListModel) {
    model.callbackQueue.sync {}
}
