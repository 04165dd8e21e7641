import TestThreads
import Testing

/// The check the concurrent-writes test relies on, on feeds made by hand: it accepts a feed
/// that is the acknowledged writes and names each way one is not.
@Suite(.ownThreads) struct AcknowledgedWritesTests {
    typealias Change = LibraryProbe.Change
    static let initial = ["a", "b", "c"]

    static func feed(_ entries: [(String, String, Int)], from version: Int64 = 11) -> [Change] {
        entries.enumerated().map { Change(version: version + Int64($0.offset), kind: $0.element.0, id: $0.element.1, index: $0.element.2) }
    }

    /// Client 0 adds x then moves it to 2; client 1 deletes at 0 then adds y.
    static let writes = AcknowledgedWrites(clients: [
        [.init(kind: .added, id: "x", index: 0), .init(kind: .moved, id: "x", index: 2)],
        [.init(kind: .deleted, id: "a", index: 0), .init(kind: .added, id: "y", index: 0)],
    ])

    @Test func feedOfTheAcknowledgedWritesPasses() {
        let feed = Self.feed([("added", "x", 0), ("moved", "x", 2), ("deleted", "a", 0), ("added", "y", 0)])
        // x a b c -> a b x c -> b x c -> y b x c
        #expect(Self.writes.problems(changes: feed, initial: Self.initial).isEmpty)
        #expect(LibraryProbe.replay(feed, on: Self.initial).ids == ["y", "b", "x", "c"])
    }

    @Test func missingPhantomAndMisfitWritesAreNamed() {
        // y's add is missing, a stray add of z is there.
        let missing = Self.feed([("added", "x", 0), ("moved", "x", 2), ("deleted", "a", 0), ("added", "z", 0)])
        let problems = Self.writes.problems(changes: missing, initial: Self.initial)
        #expect(problems.contains { $0.contains("write 1 (added y@0)") && $0.contains("not in the change feed") })
        #expect(problems.contains { $0.contains("add of z") })
        // The delete names an album that is not at index 0.
        let misfit = Self.feed([("added", "x", 0), ("deleted", "a", 0), ("moved", "x", 2), ("added", "y", 0)])
        #expect(Self.writes.problems(changes: misfit, initial: Self.initial).contains { $0.contains("not at that index") })
    }

    @Test func versionsAgainstAClientsOwnOrderAreNamed() {
        // Client 1's add of y committed before its delete of a, which it sent first.
        let feed = Self.feed([("added", "y", 0), ("added", "x", 0), ("moved", "x", 2), ("deleted", "a", 1)])
        let problems = Self.writes.problems(changes: feed, initial: Self.initial)
        #expect(problems.contains { $0.contains("client 1 write 1") && $0.contains("is not after") })
    }

    @Test func moveThatMovedNothingPassesOnlyWhereTheAlbumWas() {
        // Client 0 moves x to 0 right after adding it there: nothing to commit, so no change.
        let noOp = AcknowledgedWrites(clients: [[.init(kind: .added, id: "x", index: 0), .init(kind: .moved, id: "x", index: 0)]])
        #expect(noOp.problems(changes: Self.feed([("added", "x", 0)]), initial: Self.initial).isEmpty)
        // A move to 3 that is not in the feed while x never stood at 3 is a lost write.
        let lost = AcknowledgedWrites(clients: [[.init(kind: .added, id: "x", index: 0), .init(kind: .moved, id: "x", index: 3)]])
        #expect(lost.problems(changes: Self.feed([("added", "x", 0)]), initial: Self.initial).contains { $0.contains("never at that index") })
    }
}
