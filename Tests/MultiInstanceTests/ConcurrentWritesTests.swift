import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// Writes through three instances at once, behind nginx, on one PostgreSQL: the versions are
/// decided in the database (unique, gap-free), the order is intact (the feed replays onto the
/// order every instance shows), and the feed is exactly the acknowledged writes.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct ConcurrentWritesTests {
    static let clients = 6
    static let writesPerClient = 30

    /// Client `client`'s load: adds at index 0 (half), deletes at index 0 (a quarter) and
    /// moves of an album it added (a quarter), each answered before the next is sent.
    static func load(port: Int, client: Int) throws -> (writes: [AcknowledgedWrites.Write], refused: [Int]) {
        var random = SeededGenerator(seed: 14_000 + UInt64(client))
        let connection = KeepAliveClient(port: port)
        var writes: [AcknowledgedWrites.Write] = []
        var refused: [Int] = []
        var mine: [String] = []
        for number in 0..<writesPerClient {
            let roll = Int.random(in: 0..<4, using: &random)
            if roll < 2 || mine.isEmpty {
                let response = try connection.request("POST", "/albums", json: #"{"title": "c\#(client) n\#(number)", "artist": "Load", "index": 0}"#)
                guard response.status == 201, let id = KeepAliveClient.object(response)?["id"] as? String else {
                    refused.append(response.status)
                    continue
                }
                mine.append(id)
                writes.append(.init(kind: .added, id: id, index: 0))
            } else if roll == 2 {
                let response = try connection.request("DELETE", "/albums/at/0")
                guard response.status == 200, let id = KeepAliveClient.object(response)?["id"] as? String else {
                    refused.append(response.status)
                    continue
                }
                writes.append(.init(kind: .deleted, id: id, index: 0))
            } else {
                let id = mine[Int.random(in: 0..<mine.count, using: &random)]
                let target = Int.random(in: 0..<4, using: &random)
                let response = try connection.request("POST", "/albums/\(id)/move", json: #"{"index": \#(target)}"#)
                guard response.status == 200 else {
                    refused.append(response.status)
                    continue
                }
                writes.append(.init(kind: .moved, id: id, index: target))
            }
        }
        return (writes, refused)
    }

    @Test func writesThroughEveryInstanceAreTheFeedInOrder() throws {
        let cluster = try InstanceCluster(databaseURL: try PostgresServer.shared().makeDatabase())
        let setup = KeepAliveClient(port: cluster.port)
        for number in 0..<10 {
            let response = try setup.request("POST", "/albums", json: #"{"title": "start \#(number)", "artist": "Setup"}"#)
            try #require(response.status == 201, "\(response.statusLine) \(response.text)\n\(cluster.logTail())")
        }
        let before = try LibraryProbe.snapshot(port: cluster.port)

        let port = cluster.port
        let results = onThreads(Self.clients) { client in try Self.load(port: port, client: client) }
        var acknowledged = AcknowledgedWrites(clients: [])
        for result in results {
            let (writes, refused) = try result.get()
            acknowledged.clients.append(writes)
            // An album another client deleted (404) or a move past the end (422); never a failure.
            #expect(refused.allSatisfy { [404, 422].contains($0) }, "refused: \(refused)\n\(cluster.logTail())")
        }
        let total = acknowledged.clients.map(\.count).reduce(0, +)
        #expect(total > Self.clients * Self.writesPerClient / 2)

        // Every instance took writes (nginx spread them), and every one shows the same order.
        for (index, instance) in cluster.instances.enumerated() {
            let writes = instance.logLines().filter { $0.contains(#""method":"POST""#) || $0.contains(#""method":"DELETE""#) }
            #expect(writes.count > 5, "instance \(index) served \(writes.count) writes")
        }
        let after = try LibraryProbe.snapshot(port: cluster.instances[0].port)
        for instance in cluster.instances.dropFirst() {
            let other = try LibraryProbe.snapshot(port: instance.port)
            #expect(other.ids == after.ids && other.version == after.version)
        }

        // The whole feed: versions 1, 2, 3, ... with no gap and no repeat.
        let feed = try LibraryProbe.changes(port: cluster.port)
        #expect(feed.map(\.version) == (0..<Int64(feed.count)).map { $0 + 1 }, "versions: \(feed.map(\.version))")
        #expect(feed.last?.version == after.version)

        // The load's part of it is exactly the acknowledged writes and replays onto the order.
        let loadFeed = feed.filter { $0.version > before.version }
        #expect(loadFeed.count <= total)
        let problems = acknowledged.problems(changes: loadFeed, initial: before.ids)
        #expect(problems.isEmpty, "\(problems.prefix(20).joined(separator: "\n"))")
        #expect(LibraryProbe.replay(loadFeed, on: before.ids).ids == after.ids)
    }
}
