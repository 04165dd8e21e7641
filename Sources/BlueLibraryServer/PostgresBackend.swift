import Essentials
import Foundation
import Library
import Postgres
import Storage
import Synchronization

/// PostgreSQL (`BLUELIBRARY_DATABASE_URL=postgres://…`): one database shared by every instance
/// started with its URL, through a pool of at most `--database-pool-size` connections (a
/// request that finds none free within the pool's acquire timeout gets 503, never a queue
/// without limit). The schema is brought up to date at start, under an advisory lock, so
/// several instances may start at once.
///
/// Besides the pool, each instance keeps one connection of its own that listens for commits
/// (``ListenWakeup``), so a pool of size 1 is still usable.
struct PostgresBackend: StoreBackend {
    let pool: PostgresPool
    let store: PostgresAlbumStore
    let recordStore: PostgresServerRecords
    private let url: String
    /// `BLUELIBRARY_DATABASE_PASSWORD_FILE`'s password (nil: the URL's, or none).
    private let password: String?
    let location: String

    var albums: any AlbumStore { store }
    var records: any ServerRecordStore { recordStore }
    var isShared: Bool { true }
    /// The database's disk is the database server's business: a full one is a failed write.
    var isDiskFull: Bool { false }
    func isDiskFull(_ error: any Error) -> Bool { false }
    var ping: (@Sendable () -> (any UnavailableDependency)?)? { { [pool] in Self.ping(pool) } }

    /// Whether the database answers `SELECT 1` through the pool (nil: it does). A full pool
    /// counts as answering: every connection is busy with a request the database is serving,
    /// so readiness does not flap under load (and the proxy does not take a busy instance out).
    static func ping(_ pool: PostgresPool) -> (any UnavailableDependency)? {
        do {
            try pool.withConnection { _ = try $0.scalar("SELECT 1", as: Int.self) }
            return nil
        } catch let error as PostgresError where error.kind == .poolExhausted {
            return nil
        } catch let error as any UnavailableDependency where error.isUnavailable {
            return error
        } catch {
            return PostgresError(kind: .connection, message: "the database does not answer: \(error)")
        }
    }

    /// Connects (lazily: the pool opens connections when asked) and migrates the schema.
    /// - Throws: ``ConfigurationError`` naming the database (without its password) when it
    ///   cannot be reached or migrated.
    init(url: String, password: String? = nil, poolSize: Int) throws {
        self.url = url
        self.password = password
        location = Self.redacted(url)
        var configuration = PostgresPool.Configuration(url: url, size: poolSize)
        configuration.password = password
        pool = PostgresPool(configuration)
        do {
            store = try PostgresAlbumStore(pool: pool)
        } catch {
            throw ConfigurationError("cannot open the database \(location): \(error)")
        }
        recordStore = PostgresServerRecords(pool: pool)
    }

    func makeStoredStateSignal() throws -> any StoredStateSignal {
        try GenerationSignal(records: recordStore)
    }

    func makeCommitWakeup() -> (any CommitWakeup)? {
        let configuration = pool.configuration
        return ListenWakeup(url: url, password: password, commits: PostgresAlbumStore.commitChannel, events: NotifyRelay.channel,
                            backoff: Backoff(first: configuration.firstReconnectDelay, longest: configuration.longestReconnectDelay))
    }

    func makeEventRelay() -> (any EventRelay)? {
        NotifyRelay(pool: pool)
    }

    func register(in metrics: Metrics) {
        metrics.sampled("bluelibrary_db_pool_open_connections", help: "PostgreSQL connections the pool holds open (idle or in use).") {
            [pool] in pool.statistics.open
        }
        metrics.sampled("bluelibrary_db_pool_in_use_connections", help: "PostgreSQL connections of the pool in use right now.") {
            [pool] in pool.statistics.inUse
        }
        metrics.sampled("bluelibrary_db_pool_waits_total", help: "Database uses that found every pooled connection busy and waited.",
                        kind: .counter) { [pool] in pool.statistics.waits }
        metrics.sampled("bluelibrary_db_pool_exhausted_total",
                        help: "Database uses that found no pooled connection within the acquire timeout (answered 503).",
                        kind: .counter) { [pool] in pool.statistics.exhausted }
    }

    func close(logger: JSONLogger) {
        pool.closeIdleConnections()
    }

    /// `url` with its password replaced by `****` (for messages and logs): in the user
    /// information (everything from the first `:` after `//` up to the LAST `@`, so an
    /// unencoded `@` in the password is hidden too) and in `password=` query parameters.
    static func redacted(_ url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        var head = String(url[..<scheme.upperBound])
        var tail = Substring(rest)
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            if let colon = userInfo.firstIndex(of: ":") {
                head += String(rest[..<colon]) + ":****"
            } else {
                head += String(userInfo)
            }
            tail = rest[at...]
        }
        guard let question = tail.firstIndex(of: "?") else { return head + tail }
        let query = tail[tail.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false).map { item in
            item.lowercased().hasPrefix("password=") ? item.prefix("password=".count) + "****" : item
        }
        return head + tail[...question] + query.joined(separator: "&")
    }
}

/// The `server_signals` generation as a stored-state signal: it moves with every change of
/// settings, the token or lockouts, whichever instance (or `bluelibrary token set`) made it.
/// One short statement per look.
final class GenerationSignal: StoredStateSignal {
    let records: PostgresServerRecords
    private let last: Mutex<Int64>

    init(records: PostgresServerRecords) throws {
        self.records = records
        last = Mutex(try records.signalGeneration())
    }

    func hasChanged() throws -> Bool {
        let now = try records.signalGeneration()
        return last.withLock { last in
            defer { last = now }
            return last != now
        }
    }
}

/// `LISTEN bluelibrary_commits` (and `bluelibrary_events`) on a connection of its own
/// (outside the pool), for the change follower: each wait returns at the first
/// notifications, or after the timeout. A lost connection is opened again on a later wait, with
/// the pool's backoff (``Backoff``: 0.1 s doubling to 2 s by default); the first wait on a new
/// connection says "committed" at once, so the follower reads what it may have missed while it
/// was away. A commit notification's payload names its library (``Wakeup/libraries``).
// @unchecked: the connection and the backoff are used by the one listening thread only
// (`wait`); `close` touches only the atomic.
final class ListenWakeup: CommitWakeup, @unchecked Sendable {
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

    init(url: String, password: String? = nil, commits: String, events: String, backoff: Backoff = Backoff()) {
        self.url = url
        self.password = password
        self.backoff = backoff
        self.commits = commits
        self.events = events
    }

    func wait(upTo timeout: Duration) -> Wakeup {
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

    func close() {
        closed.store(true, ordering: .relaxed)
    }

    /// Opens and listens (after the backoff has passed); true when listening again.
    private func reconnect(within timeout: Duration) -> Bool {
        let now = ContinuousClock.now
        if now < nextAttempt {
            Thread.sleep(forTimeInterval: min(timeout, nextAttempt - now).seconds)
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
final class NotifyRelay: EventRelay {
    static let channel = "bluelibrary_events"
    static let maxPending = 1000
    /// NOTIFY payloads must stay under 8000 bytes.
    static let maxPayloadBytes = 7900

    let instance = UUID().uuidString
    private let pool: PostgresPool
    private let queue = DispatchQueue(label: "bluelibrary.event-relay")
    private let pending = Atomic<Int>(0)

    init(pool: PostgresPool) {
        self.pool = pool
    }

    func relay(_ event: RelayedEvent) {
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
