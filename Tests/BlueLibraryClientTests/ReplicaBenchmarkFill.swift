import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryClient

/// Not a test: the first half of `scripts/bench-replica`. Queues many local mutations in an
/// existing replica file (made by `bluelibrary sync`), as an app working offline would, so the
/// script can time the `bluelibrary sync` that sends them. Runs only when
/// `BLUELIBRARY_REPLICA_BENCH_FILE` names the file; `BLUELIBRARY_REPLICA_BENCH_MUTATIONS`
/// (default 10,000) says how many. The mix (seeded, so every run queues the same): 50% adds
/// (at a random index, or appended), 20% patches, 15% moves, 15% deletes of a random album.
@Suite("Replica benchmark: queue mutations", .ownThreads) struct ReplicaBenchmarkFill {
    static let file = ProcessInfo.processInfo.environment["BLUELIBRARY_REPLICA_BENCH_FILE"]

    @Test(.enabled(if: ReplicaBenchmarkFill.file != nil)) func queueMutations() async throws {
        let path = try #require(Self.file)
        let count = ProcessInfo.processInfo.environment["BLUELIBRARY_REPLICA_BENCH_MUTATIONS"].flatMap { Int($0) } ?? 10_000
        // Local edits only: the client is never asked.
        let replica = try LibraryReplica(path: path, client: BlueLibraryClient(baseURL: URL(string: "http://127.0.0.1:1")!), library: nil)
        // Detached: on the concurrency pool as in an app, not on a thread per job (`.ownThreads`).
        let (seconds, albums) = try await Task.detached { try await Self.queue(count, in: replica) }.value
        let pending = try await replica.pendingCount()
        print("replica-fill: \(count) mutations queued in \(String(format: "%.2f", seconds)) s; \(pending) pending; \(albums) albums")
        #expect(pending >= count)
    }

    /// Queues `count` mutations; answers the seconds it took and the albums left.
    static func queue(_ count: Int, in replica: LibraryReplica) async throws -> (Double, Int) {
        var ids = try await replica.albums().map(\.id)
        var random = SeededGenerator(seed: 18)
        let start = ContinuousClock.now
        for n in 0..<count {
            let roll = Int.random(in: 0..<100, using: &random)
            if roll < 50 || ids.count < 2 {
                let index = Bool.random(using: &random) ? Int.random(in: 0...ids.count, using: &random) : nil
                let album = try await replica.add(AlbumInput(title: "Offline \(n)", artist: "Bench Artist \(n % 97)", year: 1950 + n % 70),
                                                  at: index)
                ids.append(album.id)
            } else if roll < 70 {
                let id = ids[Int.random(in: 0..<ids.count, using: &random)]
                try await replica.update(id: id, AlbumPatchInput(title: "Edited \(n)", year: 1960 + n % 60))
            } else if roll < 85 {
                let id = ids[Int.random(in: 0..<ids.count, using: &random)]
                try await replica.move(id: id, to: Int.random(in: 0..<ids.count, using: &random))
            } else {
                let position = Int.random(in: 0..<ids.count, using: &random)
                try await replica.delete(id: ids[position])
                ids.remove(at: position)
            }
        }
        return ((ContinuousClock.now - start) / .seconds(1), ids.count)
    }
}
