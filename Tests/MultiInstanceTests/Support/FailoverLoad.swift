#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPTestSupport

/// One client operation of a ``FailoverLoad``, with when it was sent and answered (one
/// monotonic clock, from the load's start) and what came of it.
struct LoggedOperation: Sendable, CustomStringConvertible {
    enum Kind: String, Sendable { case add, delete, move, read }
    enum Outcome: Sendable, Equatable {
        /// 200/201: it took effect (a read: it saw `version`).
        case acknowledged
        /// A definite no (404, 422): it changed nothing.
        case refused
        /// 502/503/504 or no answer: it may or may not have taken effect. (An add sent again with
        /// its key and answered 409 took effect, its answer lost: ambiguous too, as its id is
        /// unknown; it is found by its title.)
        case ambiguous
    }

    var client: Int
    var number: Int
    var kind: Kind
    /// The album: the one moved or deleted, or the one added (once an answer named it).
    var albumID: String?
    /// An add's title (unique in the run: how an add whose answer was lost is found).
    var title: String?
    /// An add's or a move's index.
    var index: Int?
    var invoked: Duration
    var completed: Duration?
    /// Every attempt's status (nil: no answer); an add is sent again with its key after an
    /// ambiguous answer.
    var statuses: [Int?] = []
    var outcome: Outcome = .ambiguous
    /// What a read saw.
    var version: Int64?
    var isWrite: Bool { kind != .read }

    var description: String {
        "c\(client)#\(number) \(kind.rawValue) \(albumID ?? title ?? "-")\(index.map { "@\($0)" } ?? "")"
            + " \(statuses.map { $0.map(String.init) ?? "no answer" })"
    }
}

/// The load of the failover tests: `clients` threads, each on its own keep-alive connection to
/// nginx, each on one library (`libraries[client % count]`), one request at a time until
/// ``stop()``: adds at index 0 (with an `Idempotency-Key`, sent again with the same key after
/// an ambiguous answer), deletes and moves of albums the client added itself, and reads of the
/// first page. Every operation is logged (``operations``) for the history check.
final class FailoverLoad: Sendable {
    let start = ContinuousClock.now
    let libraries: [String]
    private let log = Locked<[LoggedOperation]>([])
    private let running = Locked(true)
    private let group = DispatchGroup()

    init(port: Int, clients: Int, libraries: [String], seed: UInt64) {
        self.libraries = libraries
        for client in 0..<clients {
            group.enter()
            let library = libraries[client % libraries.count]
            Thread.detachNewThread { [self] in
                defer { group.leave() }
                run(client: client, library: library, port: port, seed: seed + UInt64(client))
            }
        }
    }

    /// The time on the load's clock.
    var now: Duration { ContinuousClock.now - start }

    static func prefix(_ library: String) -> String { library == "default" ? "" : "/libraries/\(library)" }

    /// Which library client `client` writes to.
    func library(of client: Int) -> String { libraries[client % libraries.count] }

    private func run(client: Int, library: String, port: Int, seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let connection = KeepAliveClient(port: port, receiveTimeout: 15)
        let prefix = Self.prefix(library)
        var mine: [String] = []
        var number = 0
        while running.value {
            number += 1
            let roll = Int.random(in: 0..<10, using: &random)
            var operation: LoggedOperation
            if roll < 4 || (roll < 8 && mine.isEmpty) {
                operation = LoggedOperation(client: client, number: number, kind: .add, title: "c\(client) n\(number)", index: 0, invoked: now)
                let key = UUID().uuidString
                // Sent again with its key while the answer is ambiguous (at most 5 times).
                while operation.statuses.count < 5 {
                    let response = try? connection.request("POST", "\(prefix)/albums",
                                                           json: #"{"title": "\#(operation.title!)", "artist": "Failover", "index": 0}"#,
                                                           headers: ["Idempotency-Key": key])
                    operation.statuses.append(response?.status)
                    if response?.status == 201, let id = response.flatMap(KeepAliveClient.object)?["id"] as? String {
                        operation.albumID = id
                        operation.outcome = .acknowledged
                        mine.append(id)
                        break
                    }
                    // 409: the key holds a change that was saved, its answer lost.
                    if let status = response?.status, status < 500, status != 409 { operation.outcome = .refused }
                    if operation.outcome == .refused || response?.status == 409 || !pause() { break }
                }
            } else if roll < 6 {
                let id = mine.remove(at: Int.random(in: 0..<mine.count, using: &random))
                operation = LoggedOperation(client: client, number: number, kind: .delete, albumID: id, invoked: now)
                let response = try? connection.request("DELETE", "\(prefix)/albums/\(id)")
                operation.statuses = [response?.status]
                operation.outcome = Self.outcome(response?.status, success: 200)
                // After an ambiguous delete the album may be gone: the client leaves it alone.
            } else if roll < 8 {
                let id = mine[Int.random(in: 0..<mine.count, using: &random)]
                let target = Int.random(in: 0..<4, using: &random)
                operation = LoggedOperation(client: client, number: number, kind: .move, albumID: id, index: target, invoked: now)
                let response = try? connection.request("POST", "\(prefix)/albums/\(id)/move", json: #"{"index": \#(target)}"#)
                operation.statuses = [response?.status]
                operation.outcome = Self.outcome(response?.status, success: 200)
            } else {
                operation = LoggedOperation(client: client, number: number, kind: .read, invoked: now)
                let response = try? connection.request("GET", "\(prefix)/albums?limit=3")
                operation.statuses = [response?.status]
                operation.outcome = Self.outcome(response?.status, success: 200)
                if response?.status == 200, let version = response.flatMap(KeepAliveClient.object)?["version"] as? Int {
                    operation.version = Int64(version)
                } else if response?.status == 200 {
                    operation.outcome = .ambiguous
                }
            }
            operation.completed = now
            let logged = operation
            log.withLock { $0.append(logged) }
            if logged.outcome == .ambiguous { _ = pause() }
        }
    }

    private static func outcome(_ status: Int?, success: Int) -> LoggedOperation.Outcome {
        guard let status else { return .ambiguous }
        if status == success { return .acknowledged }
        return status >= 500 || status == 409 ? .ambiguous : .refused
    }

    /// A client's pause after an ambiguous answer (as a client honouring Retry-After would, but
    /// short), ended early by ``stop()``; false when the load is stopping.
    private func pause() -> Bool {
        !eventually(timeout: .milliseconds(25), pollingEvery: .milliseconds(5)) { !running.value }
    }

    /// The operations so far, in the order they were answered.
    var operations: [LoggedOperation] { log.value }

    /// How many writes were acknowledged after being sent at or after `time`.
    func acknowledgedWrites(sentAfter time: Duration) -> Int {
        log.withLock { $0.filter { $0.isWrite && $0.outcome == .acknowledged && $0.invoked >= time }.count }
    }

    /// Stops every client (each finishes the operation it is in) and returns every operation.
    func stop() -> [LoggedOperation] {
        running.withLock { $0 = false }
        group.wait()
        return operations
    }
}

/// A `GET /events?library=<library>` subscriber through nginx, reading on a thread of its own
/// until ``stop()`` or the stream ends: every event it got, in order.
final class EventSubscriber: @unchecked Sendable {
    struct Event: Sendable, CustomStringConvertible {
        var id: String?
        var name: String
        var data: String
        var description: String { "\(id ?? "-") \(name) \(data)" }
    }

    let library: String
    private let client: RawHTTPClient
    private let events = Locked<[Event]>([])
    private let subscribed = Locked(false)
    /// Why the stream ended before ``stop()`` (nil while it runs, or when stopped).
    private let ending = Locked<String?>(nil)
    private let stopping = Locked(false)
    private let done = DispatchSemaphore(value: 0)

    init(port: Int, library: String) throws {
        self.library = library
        client = try RawHTTPClient(port: port, receiveTimeout: 120)
        try client.send("GET /events?library=\(library) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
        let head = try client.readResponse(isHead: true)
        guard head.status == 200 else { throw RawHTTPClient.ClientError("GET /events?library=\(library): \(head.statusLine)") }
        Thread.detachNewThread { [self] in
            defer { done.signal() }
            var text = ""
            do {
                while let chunk = try client.readChunk() {
                    text += String(decoding: chunk, as: UTF8.self)
                    while let end = text.range(of: "\n\n") {
                        let frame = String(text[..<end.lowerBound])
                        text = String(text[end.upperBound...])
                        handle(frame)
                    }
                }
                if !stopping.value { ending.withLock { $0 = "the stream ended" } }
            } catch {
                if !stopping.value { ending.withLock { $0 = "\(error)" } }
            }
        }
    }

    private func handle(_ frame: String) {
        var event = Event(id: nil, name: "message", data: "")
        var isEvent = false
        for line in frame.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == ": subscribed" { subscribed.withLock { $0 = true } }
            if line.hasPrefix("id: ") { event.id = String(line.dropFirst(4)); isEvent = true }
            if line.hasPrefix("event: ") { event.name = String(line.dropFirst(7)); isEvent = true }
            if line.hasPrefix("data: ") { event.data += String(line.dropFirst(6)); isEvent = true }
        }
        if isEvent { events.withLock { $0.append(event) } }
    }

    /// True once the subscription is live: nothing published afterwards is missed.
    var isSubscribed: Bool { subscribed.value }
    var received: [Event] { events.value }
    /// Why the stream ended early, or nil while it is (or stayed) connected.
    var endedEarly: String? { ending.value }

    /// Closes the stream and waits for the reader.
    func stop() {
        stopping.withLock { $0 = true }
        shutdown(client.fd, Int32(SHUT_RDWR))
        done.wait()
    }
}
