import Essentials
import Library
import Storage

/// PostgreSQL (`BLUELIBRARY_DATABASE_URL=postgres://…`): one database shared by every instance
/// started with its URL, through a pool of at most `--database-pool-size` connections (a
/// request that finds none free within the pool's acquire timeout gets 503, never a queue
/// without limit). The schema is brought up to date at start, under an advisory lock, so
/// several instances may start at once. What is PostgreSQL about it (the pool, LISTEN/NOTIFY,
/// the stored-state generation) is `Storage`'s ``PostgresDatabase``; this adapts it to the seam.
struct PostgresBackend: StoreBackend {
    let database: PostgresDatabase
    let location: String

    var albums: any AlbumStore { database.albums }
    var records: any ServerRecordStore { database.records }
    var isShared: Bool { true }
    /// The database's disk is the database server's business: a full one is a failed write.
    var isDiskFull: Bool { false }
    func isDiskFull(_ error: any Error) -> Bool { false }
    var ping: (@Sendable () -> (any UnavailableDependency)?)? { { [database] in database.ping() } }

    /// Connects (lazily: the pool opens connections when asked) and migrates the schema.
    /// - Throws: ``ConfigurationError`` naming the database (without its password) when it
    ///   cannot be reached or migrated.
    init(url: String, password: String? = nil, poolSize: Int, readURLs: [String] = [],
         replicas: PostgresReplicas.Configuration = PostgresReplicas.Configuration()) throws {
        location = Self.redacted(url)
        do {
            database = try PostgresDatabase(url: url, password: password, poolSize: poolSize, readURLs: readURLs, replicaConfiguration: replicas)
        } catch {
            throw ConfigurationError("cannot open the database \(location): \(error)")
        }
    }

    func makeStoredStateSignal() throws -> any StoredStateSignal { try database.makeStoredStateSignal() }
    func makeCommitWakeup() -> (any CommitWakeup)? { database.makeCommitWakeup() }
    func makeEventRelay() -> (any EventRelay)? { database.makeEventRelay() }

    func register(in metrics: Metrics) {
        metrics.sampled("bluelibrary_db_pool_open_connections", help: "PostgreSQL connections the pool holds open (idle or in use).") {
            [database] in database.poolStatistics.open
        }
        metrics.sampled("bluelibrary_db_pool_in_use_connections", help: "PostgreSQL connections of the pool in use right now.") {
            [database] in database.poolStatistics.inUse
        }
        metrics.sampled("bluelibrary_db_pool_waits_total", help: "Database uses that found every pooled connection busy and waited.",
                        kind: .counter) { [database] in database.poolStatistics.waits }
        metrics.sampled("bluelibrary_db_pool_exhausted_total",
                        help: "Database uses that found no pooled connection within the acquire timeout (answered 503).",
                        kind: .counter) { [database] in database.poolStatistics.exhausted }
        metrics.sampled("bluelibrary_db_version_reads_total",
                        help: "Reads of library versions this instance made (each shared by the requests that came while the one before ran).",
                        kind: .counter) { [database] in database.albums.versionReadStatistics.reads }
        metrics.sampled("bluelibrary_db_version_read_calls_total",
                        help: "Requests (and follower passes) that asked for library versions; divided by the reads: how many each read served.",
                        kind: .counter) { [database] in database.albums.versionReadStatistics.calls }
        metrics.sampled("bluelibrary_db_write_transactions_total",
                        help: "Transactions this instance committed (or rolled back as a whole) for writes of one library.",
                        kind: .counter) { [database] in database.albums.writeGroupStatistics.transactions }
        registerReplicas(in: metrics)
        metrics.sampled("bluelibrary_db_writes_total",
                        help: "Writes those transactions carried (writes of a library queued meanwhile share one transaction).",
                        kind: .counter) { [database] in database.albums.writeGroupStatistics.jobs }
    }

    var replicaStatus: (@Sendable () -> [ReplicaStatus])? {
        guard let replicas = database.replicas else { return nil }
        return {
            replicas.replicas.map { replica in
                ReplicaStatus(name: replica.name, lagSeconds: replica.lag.map(\.seconds),
                              serving: replica.isFit(maxLag: replicas.configuration.maxLag))
            }
        }
    }

    /// The replicas' lag, reads and state, and what the reads that could use one did.
    private func registerReplicas(in metrics: Metrics) {
        guard let replicas = database.replicas else { return }
        metrics.register("bluelibrary_db_replica_lag_seconds",
                         help: "How far each read replica was behind the primary at the last look (4 looks a second); none while it does not answer.",
                         kind: .gauge) { writer in
            for replica in replicas.replicas {
                if let lag = replica.lag { writer.sample("", [("replica", replica.name)], lag.seconds) }
            }
        }
        metrics.register("bluelibrary_db_replica_serving", help: "1 while reads use the replica (it answers and is within the lag limit), else 0.",
                         kind: .gauge) { writer in
            for replica in replicas.replicas {
                writer.sample("", [("replica", replica.name)], replica.isFit(maxLag: replicas.configuration.maxLag) ? 1 : 0)
            }
        }
        metrics.register("bluelibrary_db_replica_reads_total", help: "Reads each replica served.", kind: .counter) { writer in
            for replica in replicas.replicas { writer.sample("", [("replica", replica.name)], replica.reads) }
        }
        metrics.sampled("bluelibrary_db_replica_waits_total",
                        help: "Reads that waited for a replica to replay what their client had written or seen.", kind: .counter) {
            replicas.statistics.waits
        }
        metrics.sampled("bluelibrary_db_replica_fallbacks_total",
                        help: "Reads of GET and HEAD requests the primary served: no replica fit, or the one tried was still behind after the wait, or failed.",
                        kind: .counter) { replicas.statistics.fallbacks }
    }

    func close(logger: JSONLogger) {
        database.closeIdleConnections()
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
