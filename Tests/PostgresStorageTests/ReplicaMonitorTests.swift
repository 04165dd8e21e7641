import HTTPTestSupport
import Postgres
import TestThreads
import Testing

@testable import Storage

/// The lag monitor measures each replica on its own: one that stops answering (its connection
/// attempt hangs until the connect timeout) delays no other replica's measurement, so the
/// others' lag stays as fresh as the monitor interval.
@Suite("PostgreSQL replicas: the lag monitor", .ownThreads)
struct ReplicaMonitorTests {
    @Test func aReplicaThatStopsAnsweringDelaysNoOthersMeasurement() throws {
        let database = try TestDatabase()
        let primary = database.pool(size: 2)
        let silent = try SilentListener()
        defer { silent.close() }
        var configuration = PostgresReplicas.Configuration()
        configuration.monitorInterval = .milliseconds(20)
        // Replica 0 answers (the primary itself: its position reads as a replica's would);
        // replica 1 accepts the connection and never answers.
        let replicas = PostgresReplicas(
            urls: [database.url, "postgres://nobody@127.0.0.1:\(silent.port)/nothing"], password: nil, poolSize: 1,
            primary: primary, configuration: configuration)
        defer { replicas.close() }
        #expect(eventually { silent.accepted >= 1 }, "replica 1's connection attempt")
        // While that attempt hangs (up to the 2 s connect timeout), replica 0 is measured again
        // and again.
        let before = replicas.replicas[0].measurements
        var closedMeanwhile = 0
        #expect(eventually {
            closedMeanwhile = silent.closedByClient
            return replicas.replicas[0].measurements >= before + 3 || closedMeanwhile > 0
        })
        #expect(closedMeanwhile == 0, "replica 0 was not measured while replica 1 hung")
        #expect(replicas.replicas[0].isFit(maxLag: .seconds(1)))
        #expect(!replicas.replicas[1].isFit(maxLag: .seconds(1)))
    }
}
