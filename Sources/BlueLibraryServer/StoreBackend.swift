import Essentials
import Foundation
import Library
import Storage

/// The database the server runs on, behind one seam: `BlueLibraryApp` never names SQLite or
/// PostgreSQL, only this. Two kinds exist:
/// - ``SQLiteBackend`` (the default): one file in the data directory, one process writing it.
/// - ``PostgresBackend`` (`BLUELIBRARY_DATABASE_URL=postgres://…`): one database that several
///   instances share (``isShared``), reached through a bounded connection pool.
protocol StoreBackend: Sendable {
    /// The libraries, albums, undo stacks, states and change feeds.
    var albums: any AlbumStore { get }
    /// The server's own records (settings, access, idempotency, secrets).
    var records: any ServerRecordStore { get }
    /// Where the data lives, for messages (a path, or a URL without its password).
    var location: String { get }
    /// True when other instances commit to the same database (``AlbumStore/isShared``): the
    /// server then takes its events from the change feed and re-reads lockouts.
    var isShared: Bool { get }

    /// True while writes are refused because the disk is full (`/readyz` says so; reads go on).
    var isDiskFull: Bool { get }
    /// True when `error`, thrown by this backend, means the disk is full (507, not 500).
    func isDiskFull(_ error: any Error) -> Bool

    /// Whether the database answers now (`/readyz`): nil from the closure when it does, the
    /// failure (503 material) when it does not; no closure when it is always there (a file).
    /// May block up to the pool's acquire and connect timeouts: call it on a worker.
    var ping: (@Sendable () -> (any UnavailableDependency)?)? { get }

    /// A watch that tells when settings, the token or lockouts were changed by another
    /// process (`bluelibrary token set`, another instance), polled once a second.
    func makeStoredStateSignal() throws -> any StoredStateSignal

    /// What wakes the change follower when another instance commits, and brings the events
    /// other instances relay (nil: not shared, or nothing better than the follower's poll).
    func makeCommitWakeup() -> (any CommitWakeup)?

    /// Where this instance relays the events no change feed carries (`state.changed`) to the
    /// other instances (nil: no other instances).
    func makeEventRelay() -> (any EventRelay)?

    /// The read replicas and how each stands (`/readyz`); nil when there are none.
    var replicaStatus: (@Sendable () -> [ReplicaStatus])? { get }

    /// Registers the backend's own metrics (pool or reader statistics).
    func register(in metrics: Metrics)

    /// Last work on graceful shutdown, once no request runs any more.
    func close(logger: JSONLogger)
}

extension StoreBackend {
    var replicaStatus: (@Sendable () -> [ReplicaStatus])? { nil }
}

/// A read replica as `/readyz` shows it.
struct ReplicaStatus: Codable, Sendable, Equatable {
    let name: String
    /// How far behind the primary it was at the last look (nil: it did not answer).
    let lagSeconds: Double?
    /// Whether reads use it now (it answers, and is within the lag limit).
    let serving: Bool
}
