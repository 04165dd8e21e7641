import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// Reads from a real streaming replica (a hot standby made from a base backup of the primary),
/// through real instances: a client that sends back the position it was given never reads
/// older than what it wrote or saw, whichever instance it asks; a replica that is behind is not
/// used for it; one that stops answering is skipped; and the replica serves the reads when
/// nothing forces the primary.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) struct ReadReplicaTests {
    @Test func writesAreReadBackThroughAnotherInstanceAndTheReplicaServesTheRest() throws {
        let pair = try StreamingReplicaPair()
        let directory = try TemporaryDirectory(prefix: "bluelibrary-replica")
        let writer = try pair.instance(directory)
        let reader = try pair.instance(directory)
        #expect(eventually(timeout: .seconds(10)) { Self.replicaServing(reader.port) }, "the replica never served: \((try? Self.readyz(reader.port)) ?? [])")

        // Write through one instance, read through the other with the position handed out:
        // every write is seen at once, though the replica may not have replayed it yet.
        var position = ""
        for round in 0..<60 {
            let title = "Replicated round\(round)"
            let created = try RawHTTPClient.request(
                port: writer.port, method: "POST", path: "/albums",
                headers: ["Content-Type": "application/json"].merging(position.isEmpty ? [:] : ["BlueLibrary-Position": position]) { $1 },
                body: Array(#"{"title": "\#(title)", "artist": "Replica"}"#.utf8))
            #expect(created.status == 201, "\(created.statusLine) \(created.text)")
            let written = try #require(created.header("BlueLibrary-Position"), "a write hands out its position")
            #expect(Self.position(written) >= Self.position(position))
            let read = try RawHTTPClient.request(port: reader.port, path: "/albums?q=round\(round)",
                                                 headers: ["BlueLibrary-Position": written])
            #expect(read.status == 200)
            #expect(read.text.contains(title), "round \(round): the read did not show the write just made\n\(read.text.prefix(300))")
            position = try #require(read.header("BlueLibrary-Position"))
            // Never older than what the client had.
            #expect(Self.position(position) >= Self.position(written))
        }

        // Reads with nothing newer to wait for: the replica serves them.
        let before = try Self.metric(reader.port, "bluelibrary_db_replica_reads_total")
        for round in 0..<100 {
            let read = try RawHTTPClient.request(port: reader.port, path: "/albums?q=Replicated&limit=\(round + 1)",
                                                 headers: ["BlueLibrary-Position": position])
            #expect(read.status == 200)
        }
        let served = try Self.metric(reader.port, "bluelibrary_db_replica_reads_total") - before
        // Each read is two store reads (the version, then the page).
        #expect(served >= 150, "the replica served \(served) of the 200 store reads")
        // A browser's cookie works as the header does.
        let withCookie = try RawHTTPClient.request(port: reader.port, path: "/albums?limit=1", headers: ["Cookie": "bl_position=\(position)"])
        #expect(withCookie.status == 200)
        #expect(Self.position(try #require(withCookie.header("BlueLibrary-Position"))) >= Self.position(position))
        // A position that is not one is the client's mistake.
        let bad = try RawHTTPClient.request(port: reader.port, path: "/albums", headers: ["BlueLibrary-Position": "yesterday"])
        #expect(bad.status == 400)
        #expect(bad.text.contains("BlueLibrary-Position"))
    }

    @Test func aReplicaBehindIsNotUsedForAClientThatWroteAndIsSkippedWhenDown() throws {
        // From here on every commit reaches the replica 5 s late; it may serve anyway (a lag
        // limit of a minute), so only the client's position keeps the writer's reads off it.
        let pair = try StreamingReplicaPair()
        let directory = try TemporaryDirectory(prefix: "bluelibrary-replica")
        let environment = ["BLUELIBRARY_REPLICA_MAX_LAG": "60"]
        let writer = try pair.instance(directory, environment: environment)
        let reader = try pair.instance(directory, environment: environment)
        #expect(eventually(timeout: .seconds(10)) { Self.replicaServing(reader.port) }, "the replica never served: \((try? Self.readyz(reader.port)) ?? [])")
        try pair.delayReplay(by: .seconds(5))

        let created = try RawHTTPClient.request(
            port: writer.port, method: "POST", path: "/albums", headers: ["Content-Type": "application/json"],
            body: Array(#"{"title": "Late on the replica", "artist": "Delay"}"#.utf8))
        #expect(created.status == 201)
        let written = try #require(created.header("BlueLibrary-Position"))
        let fallbacks = try Self.metric(reader.port, "bluelibrary_db_replica_fallbacks_total")
        // The client that wrote sees its write (the primary answers after the bounded wait) ...
        let own = try RawHTTPClient.request(port: reader.port, path: "/albums?q=Late", headers: ["BlueLibrary-Position": written])
        #expect(own.status == 200)
        #expect(own.text.contains("Late on the replica"), "the writer's read did not show its write: \(own.text.prefix(300))")
        #expect(try Self.metric(reader.port, "bluelibrary_db_replica_fallbacks_total") > fallbacks)
        // ... while a fresh client is served by the replica, 5 s behind: what it sees is
        // bounded by the lag limit, not by anyone's write.
        let fresh = try RawHTTPClient.request(port: reader.port, path: "/albums?q=Late&fresh=1")
        #expect(fresh.status == 200)
        #expect(!fresh.text.contains("Late on the replica"), "the delayed replica showed the write already")
        // The lag is measured and shown.
        #expect(eventually(timeout: .seconds(10)) {
            ((try? Self.readyz(reader.port))?.first?["lagSeconds"] as? Double ?? 0) >= 1
        }, "the replica's lag was never measured: \((try? Self.readyz(reader.port)) ?? [])")

        // The replica stops answering: it is skipped, and every read is still answered.
        try pair.replica.stop()
        defer { try? pair.replica.start() }
        for round in 0..<20 {
            let read = try RawHTTPClient.request(port: reader.port, path: "/albums?q=Late&down=\(round)")
            #expect(read.status == 200, "round \(round): \(read.statusLine) \(read.text.prefix(200))")
            #expect(read.text.contains("Late on the replica"), "round \(round): the primary should answer now")
        }
        #expect(eventually(timeout: .seconds(10)) { !Self.replicaServing(reader.port) })
        #expect(try RawHTTPClient.request(port: reader.port, path: "/readyz").status == 200, "a replica down leaves the instance ready")
        try pair.replica.start()
        #expect(eventually(timeout: .seconds(20)) { Self.replicaServing(reader.port) }, "the replica never served again")
    }

    // MARK: - Helpers

    static func position(_ text: String) -> UInt64 {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let high = UInt64(parts[0], radix: 16), let low = UInt64(parts[1], radix: 16) else { return 0 }
        return high << 32 | low
    }

    static func readyz(_ port: Int) throws -> [[String: Any]] {
        let response = try RawHTTPClient.request(port: port, path: "/readyz")
        return try response.json()["replicas"] as? [[String: Any]] ?? []
    }

    static func replicaServing(_ port: Int) -> Bool {
        (try? readyz(port))?.first?["serving"] as? Bool ?? false
    }

    /// The sum of a metric's samples on `port`'s `/metrics`.
    static func metric(_ port: Int, _ name: String) throws -> Double {
        let text = try RawHTTPClient.request(port: port, path: "/metrics").text
        return text.split(separator: "\n").filter { $0.hasPrefix(name + " ") || $0.hasPrefix(name + "{") }
            .compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
    }
}
