#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// Three instances behind nginx on a Patroni-managed PostgreSQL cluster of three nodes (what
/// `deploy/compose.patroni.yaml` runs), reached through one multi-host URL with
/// `target_session_attrs=read-write`, while six clients add, move and delete albums in two
/// libraries and read them: the primary's postmaster is killed with SIGKILL, or Patroni is
/// told to switch over. Afterwards every acknowledged write is in the change feed exactly
/// once, an ambiguous one (a 503 or no answer) at most once, the versions are gap-free, the
/// feed replays onto the order every instance serves, each library's history of versions is
/// linearizable (``VersionHistory``), and every event stream that stayed connected got every
/// change once, in order. How long writes stopped and how many 503s came meanwhile is printed.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) struct PatroniFailoverTests {
    enum Fault: String { case sigkill = "SIGKILL of the primary's postmaster", switchover = "patronictl switchover" }

    static let libraries = ["default", "second"]

    @Test func primaryKilledUnderLoadLosesNoAcknowledgedWrite() throws {
        try run(.sigkill, seed: 51_000)
    }

    @Test func switchoverUnderLoadLosesNoAcknowledgedWrite() throws {
        try run(.switchover, seed: 52_000)
    }

    func run(_ fault: Fault, seed: UInt64) throws {
        let patroni = try PatroniCluster()
        let cluster = try InstanceCluster(databaseURL: patroni.databaseURL)
        let setup = KeepAliveClient(port: cluster.port)
        let created = try setup.request("POST", "/libraries", json: #"{"id": "second", "name": "Second"}"#)
        try #require(created.status == 201, "\(created.statusLine) \(created.text)\n\(cluster.logTail())")
        for library in Self.libraries {
            for number in 0..<8 {
                let response = try setup.request("POST", "\(FailoverLoad.prefix(library))/albums", json: #"{"title": "start \#(number)", "artist": "Setup"}"#)
                try #require(response.status == 201, "\(response.statusLine) \(response.text)")
            }
        }
        var initial: [String: (ids: [String], version: Int64)] = [:]
        for library in Self.libraries {
            let snapshot = try Self.albums(port: cluster.port, library: library)
            initial[library] = (snapshot.albums.map(\.id), snapshot.version)
        }
        // Two event streams per library, through nginx (so on any instance), live before the load.
        let subscribers = try Self.libraries.flatMap { library in try (0..<2).map { _ in try EventSubscriber(port: cluster.port, library: library) } }
        defer { for subscriber in subscribers where subscriber.endedEarly == nil { subscriber.stop() } }
        try #require(eventually(timeout: .seconds(10)) { subscribers.allSatisfy(\.isSubscribed) }, "an event stream never subscribed")

        let load = FailoverLoad(port: cluster.port, clients: 6, libraries: Self.libraries, seed: seed)
        var stopped = false
        defer { if !stopped { _ = load.stop() } }
        try #require(eventually(timeout: .seconds(30), pollingEvery: .milliseconds(20)) { load.acknowledgedWrites(sentAfter: .zero) >= 40 },
                     "the load never got going: \(load.operations.suffix(5))\n\(cluster.logTail())")

        // A watcher notes when Patroni reports another member leading and running (promoted).
        let oldLeader = patroni.leaderName()
        let promoted = Locked<Duration?>(nil)
        let watching = DispatchGroup()
        watching.enter()
        let faultAt = load.now
        Thread.detachNewThread {
            defer { watching.leave() }
            eventually(timeout: .seconds(60), pollingEvery: .milliseconds(20)) {
                guard let leader = patroni.leaderName(), leader != oldLeader else { return false }
                promoted.withLock { $0 = load.now }
                return true
            }
        }
        let detail: String
        switch fault {
        case .sigkill:
            detail = "killed the postmaster of \(try patroni.killLeaderPostmaster())"
        case .switchover:
            let (from, to) = try patroni.switchover()
            detail = "switched over from \(from) to \(to)"
        }
        // Writes resume by themselves on the new primary (a generous bound, not a timing), and
        // go on for a while. (During a switchover the old primary serves until Patroni stops
        // it: only writes sent once the new one runs count.)
        #expect(eventually(timeout: .seconds(60), pollingEvery: .milliseconds(5)) {
            promoted.value.map { load.acknowledgedWrites(sentAfter: $0) >= 1 } ?? false
        }, "writes did not resume within 60 s of the \(fault.rawValue): \(load.operations.suffix(8))\n\(cluster.logTail())\n\(patroni.logTail())")
        #expect(eventually(timeout: .seconds(60), pollingEvery: .milliseconds(20)) {
            promoted.value.map { load.acknowledgedWrites(sentAfter: $0) >= 60 } ?? false
        }, "writes did not go on after the \(fault.rawValue): \(load.operations.suffix(8))")
        let operations = load.stop()
        stopped = true
        watching.wait()
        let promotedAt = promoted.value ?? load.now

        // The figures: when Patroni had the new primary running, the longest pause between
        // acknowledged writes from the fault on (the outage: after a SIGKILL it begins at once,
        // in a switchover once Patroni stops the old primary), and what the clients got during it.
        let acknowledgedAt = operations.filter { $0.isWrite && $0.outcome == .acknowledged }.map { $0.completed! }.sorted()
        let pause = zip(acknowledgedAt, acknowledgedAt.dropFirst()).filter { $0.1 >= faultAt }
            .map { (start: max($0.0, faultAt), end: $0.1) }.max { $0.end - $0.start < $1.end - $1.start } ?? (faultAt, faultAt)
        let attempts = operations.filter { $0.completed! > pause.start && $0.completed! <= pause.end }.flatMap(\.statuses)
        let after503 = operations.filter { $0.invoked >= faultAt }.flatMap { operation in
            operation.statuses.filter { $0 == 503 }.map { _ in operation.completed! }
        }.sorted()
        let figures = "\(fault.rawValue) (\(detail)): new primary running \(Self.milliseconds(promotedAt - faultAt)) ms after it; "
            + "no write acknowledged from \(Self.milliseconds(pause.start - faultAt)) to \(Self.milliseconds(pause.end - faultAt)) ms "
            + "(\(Self.milliseconds(pause.end - pause.start)) ms, ending \(Self.milliseconds(pause.end - promotedAt)) ms after the promotion), "
            + "meanwhile \(attempts.filter { $0 == 503 }.count) answers 503, "
            + "\(attempts.filter { $0 == 502 || $0 == 504 }.count) 502/504, \(attempts.filter { $0 == nil }.count) without an answer, "
            + "\(attempts.filter { $0 == 409 }.count) 409 (key in progress), \(attempts.filter { $0 == 200 }.count) reads answered 200; "
            + "from the fault to the end \(after503.count) answers 503, the last \(Self.milliseconds((after503.last ?? faultAt) - faultAt)) ms after it; "
            + "\(operations.count) operations in all"
        print("PatroniFailoverTests: " + figures)
        // Per 250 ms from the fault until writes are back to normal: writes acknowledged / answers 503.
        let buckets = (0..<24).map { bucket -> String in
            let (from, to) = (faultAt + .milliseconds(250 * bucket), faultAt + .milliseconds(250 * (bucket + 1)))
            let within = operations.filter { $0.completed! >= from && $0.completed! < to }
            return "\(within.filter { $0.isWrite && $0.outcome == .acknowledged }.count)/\(within.flatMap(\.statuses).filter { $0 == 503 }.count)"
        }
        print("PatroniFailoverTests: \(fault.rawValue): writes acknowledged/503s per 250 ms from the fault: \(buckets.joined(separator: " "))")
        // Why connections failed meanwhile, as the instances logged it (libpq's messages).
        var reasons: [String: Int] = [:]
        for line in cluster.instances.flatMap({ $0.logLines() }) {
            for reason in ["the database system is starting up", "the database system is shutting down", "the database system is in recovery mode",
                           "Connection refused", "terminating connection", "server closed the connection unexpectedly",
                           "session is read-only", "read-only transaction"] where line.contains(reason) {
                reasons[reason, default: 0] += 1
            }
        }
        print("PatroniFailoverTests: \(fault.rawValue): instance log lines by reason: \(reasons.sorted { $0.key < $1.key })")

        // Nothing but successes, definite refusals and the ambiguous answers of an outage.
        let unexpected = operations.filter { operation in
            operation.statuses.contains { status in status.map { ![200, 201, 409, 422, 502, 503, 504].contains($0) } ?? false }
        }
        #expect(unexpected.isEmpty, "unexpected answers: \(unexpected.prefix(10))\n\(cluster.errorLines())")
        #expect(cluster.allRunning, "an instance died\n\(cluster.logTail())")

        for library in Self.libraries {
            do {
                let prefix = FailoverLoad.prefix(library)
                // Every instance serves the same list at the same version. (Asked directly, an
                // instance answers 503 once for each pooled connection to the old primary, which it
                // finds broken only when it uses it: nginx would have tried another instance.)
                let final = try Self.settled { try Self.albums(port: cluster.instances[0].port, library: library) }
                for (index, instance) in cluster.instances.enumerated().dropFirst() {
                    let other = try Self.settled { try Self.albums(port: instance.port, library: library) }
                    #expect(other.albums.map(\.id) == final.albums.map(\.id) && other.version == final.version,
                            "\(library): instance \(index) serves v\(other.version), instance 0 v\(final.version)")
                }
                // The whole feed is 1, 2, 3, ... with no gap or repeat.
                let whole = try Self.settled { try LibraryProbe.changes(port: cluster.port, prefix: prefix) }
                #expect(whole.map(\.version) == Array(stride(from: 1, through: final.version, by: 1)), "\(library): versions \(whole.map(\.version))")
                let start = try #require(initial[library])
                let feed = whole.filter { $0.version > start.version }
                let mine = operations.filter { load.library(of: $0.client) == library }.sorted { ($0.client, $0.number) < ($1.client, $1.number) }
                let resolved = FailoverHistory(operations: mine, initial: start, feed: feed, final: final)
                #expect(resolved.problems.isEmpty, "\(library): \(resolved.problems.prefix(20).joined(separator: "\n"))")
                let linearizability = resolved.history.problems()
                #expect(linearizability.isEmpty, "\(library): not linearizable: \(linearizability.prefix(10).joined(separator: "\n"))")
                print("PatroniFailoverTests: \(fault.rawValue), library \(library): \(feed.count) changes, \(resolved.acknowledgedWrites) writes acknowledged, "
                      + "\(resolved.ambiguousApplied) ambiguous writes took effect, \(resolved.ambiguousNotApplied) did not; "
                      + "\(resolved.history.operations.filter { $0.kind == .read }.count) reads checked")

                // Every stream still connected got every change once, in order, with its version as id.
                let expected = feed.map { "v\($0.version) \($0.kind) \($0.id ?? "-")" }
                let streams = subscribers.filter { $0.library == library }
                for subscriber in streams where subscriber.endedEarly == nil {
                    eventually(timeout: .seconds(20), pollingEvery: .milliseconds(10)) {
                        Self.albumEvents(subscriber, after: start.version).count >= expected.count
                    }
                }
                for (number, subscriber) in streams.enumerated() {
                    if let ending = subscriber.endedEarly {
                        print("PatroniFailoverTests: \(library) stream \(number) ended early: \(ending)")
                        continue
                    }
                    // (An event of the setup may come after the subscription: a stream makes its
                    // instance follow the library's feed, from where the instance had it.)
                    let received = Self.albumEvents(subscriber, after: start.version)
                    let difference = zip(received, expected).first { $0 != $1 }.map { "\($0) instead of \($1)" } ?? "a missing or extra tail"
                    let same = received == expected
                    #expect(same, "\(library) stream \(number): \(received.count) events, \(expected.count) changes; first difference: \(difference)")
                    let others = subscriber.received.filter { !$0.name.hasPrefix("album.") && $0.name != "state.changed" }
                    #expect(others.isEmpty, "\(library) stream \(number): \(others.prefix(5))")
                }
                #expect(streams.contains { $0.endedEarly == nil }, "\(library): no event stream stayed connected")
            } catch {
                let running = cluster.instances.map { $0.process.isRunning }
                Issue.record("\(library): \(error)\ninstances running: \(running)\n\(cluster.logTail(lines: 40))\n\(patroni.logTail())")
            }
        }

        // The old primary is back as a standby (rewound if need be): three members again, one
        // timeline, a synchronous standby.
        let rejoinStart = load.now
        #expect(patroni.waitUntilHealthy(timeout: .seconds(60)), "the cluster did not heal: \(patroni.members())\n\(patroni.logTail())")
        print("PatroniFailoverTests: \(fault.rawValue): cluster healthy again \(Self.milliseconds(load.now - faultAt)) ms after the fault "
              + "(checked from \(Self.milliseconds(rejoinStart - faultAt)) ms): \(patroni.members())")
    }

    /// A subscriber's album events after `version` as "v<version> <kind> <album id>".
    static func albumEvents(_ subscriber: EventSubscriber, after version: Int64) -> [String] {
        subscriber.received.filter { $0.name.hasPrefix("album.") }.compactMap { event in
            let data = (try? JSONSerialization.jsonObject(with: Data(event.data.utf8))) as? [String: Any] ?? [:]
            // The id of a stream over `?library=<id>` is `<id>:<version>`.
            guard let id = event.id?.split(separator: ":").last.flatMap({ Int64($0) }), id > version else { return nil }
            return "v\(id) \(event.name.dropFirst("album.".count)) \(data["id"] as? String ?? "-")"
        }
    }

    /// A library's albums (id and title, in order) and the version they were read at, from one
    /// page (at most 500 albums).
    static func albums(port: Int, library: String) throws -> (albums: [(id: String, title: String)], version: Int64) {
        let path = "\(FailoverLoad.prefix(library))/albums?limit=500"
        let response = try RawHTTPClient.request(port: port, path: path, receiveTimeout: 30)
        guard response.status == 200, let page = try? response.json(), let items = page["items"] as? [[String: Any]],
            let version = page["version"] as? Int, page["next"] == nil || page["next"] is NSNull
        else { throw LibraryProbe.ProbeError(description: "GET \(path) answered \(response.status): \(response.text.prefix(300))") }
        return (items.map { ($0["id"] as? String ?? "?", $0["title"] as? String ?? "?") }, Int64(version))
    }

    /// `body`'s result, asked again while it throws (a 503), for at most 30 s.
    static func settled<T>(_ body: () throws -> T) throws -> T {
        var result: Result<T, any Error> = .failure(LibraryProbe.ProbeError(description: "never asked"))
        eventually(timeout: .seconds(30), pollingEvery: .milliseconds(50)) {
            result = Result { try body() }
            return (try? result.get()) != nil
        }
        return try result.get()
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }
}
