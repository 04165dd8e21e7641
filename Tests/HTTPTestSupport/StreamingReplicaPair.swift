import Foundation

/// A primary PostgreSQL and a hot standby streaming from it (a base backup of it), with a
/// test's database on both; commits are synchronous, as in production.
public struct StreamingReplicaPair {
    public let primary: PostgresServer
    public let replica: PostgresServer
    public let primaryURL: String
    public let replicaURL: String

    public init() throws {
        primary = try PostgresServer()
        // As in production: a commit is flushed (and so streamed) before it is acknowledged.
        // (The tests' clusters commit asynchronously, which holds WAL back from replicas
        // for up to wal_writer_delay, 200 ms: longer than a read waits.)
        try primary.execute("ALTER SYSTEM SET synchronous_commit = on")
        try primary.execute("SELECT pg_reload_conf()")
        primaryURL = try primary.makeDatabase()
        replica = try PostgresServer(standbyOf: primary)
        replicaURL = primaryURL.replacingOccurrences(of: ":\(primary.port)/", with: ":\(replica.port)/")
    }

    /// Holds back replaying each commit on the replica by `delay` from now on.
    public func delayReplay(by delay: Duration) throws {
        try replica.execute("ALTER SYSTEM SET recovery_min_apply_delay = '\(Int(delay / .milliseconds(1)))ms'")
        try replica.execute("SELECT pg_reload_conf()")
    }

    /// An instance on the primary reading from the replica.
    public func instance(_ directory: TemporaryDirectory, environment: [String: String] = [:]) throws -> ServerProcess {
        try ServerProcess(
            environment: ["BLUELIBRARY_DATABASE_URL": primaryURL, "BLUELIBRARY_DATABASE_READ_URL": replicaURL,
                          "BLUELIBRARY_EVENT_LOOPS": "1"].merging(environment) { $1 },
            dataDirectory: directory.path)
    }
}
