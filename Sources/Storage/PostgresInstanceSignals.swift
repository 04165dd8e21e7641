import Dispatch
import Essentials
import Foundation
import Postgres
import Synchronization

/// `LISTEN bluelibrary_commits` (and `bluelibrary_events`) on a connection of its own
/// (outside the pool), for the change follower: each wait returns at the first
/// notifications, or after the timeout. A lost connection is opened again on a later wait, with
/// the pool's backoff (``Backoff``: 0.1 s doubling to 2 s by default); the first wait on a new
/// connection says "committed" at once, so the follower reads what it may have missed while it
/// was away. A commit notification's payload names its library (``Wakeup/libraries``).
// @unchecked: the connection and the backoff are used by the one listening thread only
// (`wait`); `close` touches only the atomic.
public final class ListenWakeup: CommitWakeup, @unchecked Sendable {
    private let url: String
    private let password: String?
    private let commits: String
    private let events: String
    private var connection: PostgresConnection?
    /// The pool's reconnect backoff (the same pauses).
    private let backoff: Backoff
    private var failures = 0
    private var nextAttempt = ContinuousClock.now
    private let closed = Atomic<Bool>(false)
    /// Signalled by ``close()``, so that a backoff pause in `wait` ends at once.
    private let closing = DispatchSemaphore(value: 0)

    public init(url: String, password: String? = nil, commits: String, events: String, backoff: Backoff = Backoff()) {
        self.url = url
        self.password = password
        self.backoff = backoff
        self.commits = commits
        self.events = events
    }

    public func wait(upTo timeout: Duration) -> Wakeup {
        guard !closed.load(ordering: .relaxed) else { return .nothing }
        guard let connection else { return reconnect(within: timeout) ? Wakeup(committed: true) : .nothing }
        let received: [PostgresNotification]
        do {
            received = try connection.notifications(waitingUpTo: timeout)
        } catch {
            self.connection = nil
            return .nothing
        }
        let decoder = JSONDecoder()
        return Wakeup(
            committed: received.contains { $0.channel == commits },
            libraries: received.filter { $0.channel == commits && !$0.payload.isEmpty }.map(\.payload),
            events: received.filter { $0.channel == events }.compactMap { try? decoder.decode(RelayedEvent.self, from: Data($0.payload.utf8)) })
    }

    public func close() {
        closed.store(true, ordering: .relaxed)
        closing.signal()
    }

    /// Opens and listens (after the backoff has passed); true when listening again.
    private func reconnect(within timeout: Duration) -> Bool {
        let now = ContinuousClock.now
        if now < nextAttempt {
            // The backoff's pause, within the caller's timeout; `close()` ends it.
            _ = closing.wait(timeout: .now() + .nanoseconds(Int(clamping: min(timeout, nextAttempt - now).nanoseconds)))
            return false
        }
        do {
            let opened = try PostgresConnection(url: url, password: password, connectTimeout: .seconds(2))
            try opened.listen(commits)
            try opened.listen(events)
            connection = opened
            failures = 0
            return true
        } catch {
            failures += 1
            nextAttempt = ContinuousClock.now + backoff.delay(afterFailures: failures)
            return false
        }
    }
}

/// Relays events to the other instances with `pg_notify('bluelibrary_events', <json>)`, sent
/// in the background, one at a time, through the pool: a request never waits for it. While the
/// database is away at most `maxPending` wait; more are dropped (a subscriber elsewhere then
/// misses a `state.changed`, which no feed could give it either).
public final class NotifyRelay: EventRelay {
    public static let channel = "bluelibrary_events"
    static let maxPending = 1000
    /// NOTIFY payloads must stay under 8000 bytes.
    static let maxPayloadBytes = 7900

    public let instance = UUID().uuidString
    private let pool: PostgresPool
    private let queue = DispatchQueue(label: "bluelibrary.event-relay")
    private let pending = Atomic<Int>(0)

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    public func relay(_ event: RelayedEvent) {
        guard let payload = try? JSONEncoder().encode(event), payload.count <= Self.maxPayloadBytes else { return }
        guard pending.wrappingAdd(1, ordering: .relaxed).newValue <= Self.maxPending else {
            pending.wrappingSubtract(1, ordering: .relaxed)
            return
        }
        let text = String(decoding: payload, as: UTF8.self)
        queue.async { [self] in
            _ = try? pool.withConnection { try $0.run("SELECT pg_notify($1, $2)", [.text(Self.channel), .text(text)]) }
            pending.wrappingSubtract(1, ordering: .relaxed)
        }
    }
}
