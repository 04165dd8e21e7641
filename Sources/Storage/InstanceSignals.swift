import Essentials
import Library
import ServerRecords

/// What the server keeps beside the albums: idempotency records, settings, the token hash and
/// lockouts, server secrets (the cursor key).
public typealias ServerRecordStore = AccessStore & IdempotencyStore & SecretStore & SettingsStore

/// Tells whether stored state another process may change (settings, the token hash,
/// lockouts) changed since the last look. One polling thread calls it.
public protocol StoredStateSignal: Sendable {
    /// True when something changed since the previous call (or since the signal was made).
    func hasChanged() throws -> Bool
}

/// Blocks until another instance may have committed (a notification), or `timeout` passes.
/// One thread (the change follower's listener) calls it.
public protocol CommitWakeup: Sendable {
    /// What arrived: whether a commit was announced (or the connection is new, so one may have
    /// been missed), and the events other instances relayed. Nothing on timeout or failure
    /// (the caller polls anyway). After a lost connection the next call reconnects, with backoff.
    func wait(upTo timeout: Duration) -> Wakeup
    /// Ends a `wait` in progress soon, and every later one at once.
    func close()
}

/// What one `CommitWakeup.wait` brought.
public struct Wakeup: Sendable, Equatable {
    public var committed: Bool
    /// The libraries the commit notifications named (one made again after its deletion is
    /// followed again).
    public var libraries: [String]
    public var events: [RelayedEvent]

    public init(committed: Bool = false, libraries: [String] = [], events: [RelayedEvent] = []) {
        self.committed = committed
        self.libraries = libraries
        self.events = events
    }

    public static let nothing = Wakeup()
}

/// An event one instance published and relays to the others, because no change feed carries
/// it (`state.changed`): the hub's event as it was formatted, with its library and the
/// instance that sent it (which ignores its own).
public struct RelayedEvent: Sendable, Equatable, Codable {
    public var instance: String
    public var library: String
    public var name: String
    public var version: Int64
    public var json: String

    public init(instance: String, library: String, name: String, version: Int64, json: String) {
        self.instance = instance
        self.library = library
        self.name = name
        self.version = version
        self.json = json
    }
}

/// Sends events to the other instances (PostgreSQL: `NOTIFY bluelibrary_events`), in the
/// background: a sender never waits for the database.
public protocol EventRelay: Sendable {
    /// This instance's id in the events it relays.
    var instance: String { get }
    func relay(_ event: RelayedEvent)
}

/// SQLite's `data_version` watch as a stored-state signal (it moves when another connection
/// commits, e.g. `bluelibrary token set`).
public struct DataVersionSignal: StoredStateSignal {
    let watch: DatabaseChangeWatch
    public init(watch: DatabaseChangeWatch) { self.watch = watch }
    public func hasChanged() throws -> Bool { try watch.hasChanged() }
}
