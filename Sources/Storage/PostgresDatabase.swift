import Essentials
import Foundation
import Postgres
import Synchronization

/// A PostgreSQL database that several instances share: the bounded pool, the album store and
/// the server's records on it, and what the instances tell each other through it (commits and
/// relayed events by LISTEN/NOTIFY, the stored-state generation). The server sees it through
/// these calls and the protocols they return, never SQL.
///
/// Besides the pool, an instance keeps one connection of its own that listens for commits
/// (``makeCommitWakeup()``), so a pool of size 1 is still usable.
public final class PostgresDatabase: Sendable {
    public let albums: PostgresAlbumStore
    public let records: PostgresServerRecords
    /// The read replicas that requests' reads may use (nil: none configured).
    public let replicas: PostgresReplicas?
    let pool: PostgresPool
    private let url: String
    private let password: String?

    /// Makes the pool (it opens connections when asked) and migrates the schema (under an
    /// advisory lock, so several instances may start at once). Throws what the migration threw.
    /// - Parameter readURLs: streaming replicas of the database, each with a pool of `poolSize`
    ///   (see ``PostgresReplicas``); the same password.
    public init(
        url: String, password: String? = nil, poolSize: Int, readURLs: [String] = [],
        replicaConfiguration: PostgresReplicas.Configuration = PostgresReplicas.Configuration()
    ) throws {
        self.url = url
        self.password = password
        var configuration = PostgresPool.Configuration(url: url, size: poolSize)
        configuration.password = password
        pool = PostgresPool(configuration)
        let replicas = readURLs.isEmpty ? nil : PostgresReplicas(
            urls: readURLs, password: password, poolSize: poolSize, primary: pool, configuration: replicaConfiguration)
        self.replicas = replicas
        do {
            albums = try PostgresAlbumStore(pool: pool, replicas: replicas)
        } catch {
            replicas?.close()
            throw error
        }
        records = PostgresServerRecords(pool: pool)
    }

    /// Whether the database answers `SELECT 1` through the pool (nil: it does). A full pool
    /// counts as answering: every connection is busy with a request the database is serving,
    /// so readiness does not flap under load (and the proxy does not take a busy instance out).
    /// May block up to the pool's acquire and connect timeouts.
    public func ping() -> (any UnavailableDependency)? { Self.ping(pool) }

    /// ``ping()`` through `pool`.
    public static func ping(_ pool: PostgresPool) -> (any UnavailableDependency)? {
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

    /// The pool's connections and waits, for metrics.
    public var poolStatistics: (open: Int, inUse: Int, waits: Int, exhausted: Int) { pool.statistics }

    /// The `server_signals` generation as a stored-state signal.
    public func makeStoredStateSignal() throws -> any StoredStateSignal {
        try GenerationSignal(records: records)
    }

    /// `LISTEN` for commits and relayed events on a connection of its own, reconnecting with
    /// the pool's backoff.
    public func makeCommitWakeup() -> any CommitWakeup {
        let configuration = pool.configuration
        return ListenWakeup(url: url, password: password, commits: PostgresAlbumStore.commitChannel, events: NotifyRelay.channel,
                            backoff: Backoff(first: configuration.firstReconnectDelay, longest: configuration.longestReconnectDelay))
    }

    /// Relays events to the other instances through the pool (`pg_notify`).
    public func makeEventRelay() -> any EventRelay {
        NotifyRelay(pool: pool)
    }

    /// Closes the pool's idle connections (on shutdown).
    public func closeIdleConnections() {
        replicas?.close()
        pool.closeIdleConnections()
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
