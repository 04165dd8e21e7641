import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryClient

/// The replica's order keys (gaps, halved by each insert between neighbours, renumbered when
/// they meet): many local inserts into the same gap, moves and deletes keep exactly the order
/// an array kept the same way does, with indexes 0..<count; the file reopened holds the same.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct ReplicaOrderTests {
    @Test(arguments: [1 as UInt64, 2, 3]) func localEditsKeepTheOrderOfAnArray(seed: UInt64) async throws {
        let directory = try TemporaryDirectory(prefix: "bluelibrary-replica-order")
        let client = BlueLibraryClient(baseURL: URL(string: "http://127.0.0.1:1")!)
        let replica = try LibraryReplica(path: directory.file("replica.sqlite"), client: client)
        var expected: [String] = []
        var random = SeededGenerator(seed: seed)
        for n in 0..<300 {
            let roll = Int.random(in: 0..<10, using: &random)
            if roll < 5 || expected.count < 2 {
                // Most inserts go to index 1: the same gap again and again, so it runs out (renumbering).
                let index = n % 3 == 0 ? Int.random(in: 0...expected.count, using: &random) : min(1, expected.count)
                let album = try await replica.add(AlbumInput(title: "A\(n)", artist: "B"), at: index)
                #expect(album.index == index)
                expected.insert(album.id, at: index)
            } else if roll < 8 {
                let from = Int.random(in: 0..<expected.count, using: &random)
                let to = Int.random(in: 0..<expected.count + 2, using: &random)  // past the end: the last index
                let moved = try await replica.move(id: expected[from], to: to)
                let id = expected.remove(at: from)
                expected.insert(id, at: min(to, expected.count))
                #expect(moved.index == min(to, expected.count - 1))
            } else {
                let at = Int.random(in: 0..<expected.count, using: &random)
                let deleted = try await replica.delete(id: expected[at])
                #expect(deleted.index == at)
                expected.remove(at: at)
            }
        }
        let albums = try await replica.albums()
        #expect(albums.map(\.id) == expected)
        #expect(albums.map(\.index) == Array(0..<expected.count).map { Optional($0) })
        // The queue replayed from the beginning (a rebuild) gives the same order.
        try await replica.rebuildLocal()
        #expect(try await replica.albums().map(\.id) == expected)
        let reopened = try LibraryReplica(path: directory.file("replica.sqlite"), client: client)
        #expect(try await reopened.albums().map(\.id) == expected)
    }
}
