#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// One of three instances killed with SIGKILL under load behind nginx: reads keep succeeding
/// (nginx retries them on another instance), and every acknowledged write is in the database.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct InstanceKillTests {
    @Test func killedInstanceLosesNoReadAndNoAcknowledgedWrite() throws {
        let cluster = try InstanceCluster(databaseURL: try PostgresServer.shared().makeDatabase())
        let load = BackgroundLoad(port: cluster.port, writers: 2, readers: 3)
        defer { _ = load.stop() }
        #expect(eventually(timeout: .seconds(20)) { load.count(.write, status: 201) >= 30 && load.count(.read, status: 200) >= 30 },
                "the load never got going: \(load.results.suffix(5))\n\(cluster.logTail())")

        cluster.kill(1)
        #expect(cluster.instances[1].process.terminationReason == .uncaughtSignal)
        // The load goes on through the two others (nginx retries what was sent to the dead one).
        let (writes, reads) = (load.count(.write, status: 201), load.count(.read, status: 200))
        #expect(eventually(timeout: .seconds(20)) { load.count(.write, status: 201) >= writes + 30 && load.count(.read, status: 200) >= reads + 30 },
                "the load stalled after the kill: \(load.results.suffix(5))\n\(cluster.logTail())")
        let outcomes = load.stop()

        #expect(cluster.instances[0].process.isRunning && cluster.instances[2].process.isRunning)
        // Every read succeeded, before, during and after the kill.
        let failedReads = outcomes.filter { $0.kind == .read && $0.status != 200 }
        #expect(failedReads.count == 0, "\(failedReads.count) reads failed, e.g. \(failedReads.prefix(5))")
        // A write in flight on the killed instance may get nginx's 502 (it is not sent twice);
        // anything else is acknowledged.
        let failedWrites = outcomes.filter { $0.kind == .write && $0.status != 201 && $0.status != 502 }
        #expect(failedWrites.count == 0, "\(failedWrites.count) writes failed, e.g. \(failedWrites.prefix(5))")
        let acknowledged = Set(outcomes.compactMap(\.id))
        let stored = Set(try LibraryProbe.allIDs(port: cluster.port))
        #expect(acknowledged.subtracting(stored).count == 0, "acknowledged but missing: \(acknowledged.subtracting(stored).prefix(10))")
    }
}
