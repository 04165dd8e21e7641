import TestThreads
import Testing

/// The linearizability check the failover tests rely on, on histories made by hand: it accepts
/// histories that fit one order of the versions within the operations' intervals and rejects
/// each kind that does not.
@Suite(.ownThreads) struct VersionHistoryTests {
    typealias Operation = VersionHistory.Operation

    static func write(_ label: String, _ version: Int64, _ invoked: Int, _ completed: Int?) -> Operation {
        Operation(kind: .write, label: label, invoked: .milliseconds(invoked), completed: completed.map { .milliseconds($0) }, version: version)
    }

    static func read(_ label: String, _ version: Int64, _ invoked: Int, _ completed: Int) -> Operation {
        Operation(kind: .read, label: label, invoked: .milliseconds(invoked), completed: .milliseconds(completed), version: version)
    }

    static func check(_ operations: [Operation], initial: Int64 = 10) -> [String] {
        VersionHistory(initialVersion: initial, operations: operations).problems()
    }

    @Test func overlappingOperationsMayTakeEffectInEitherOrder() {
        // a and b overlap, so b may have the smaller version; the reads overlap them too.
        #expect(Self.check([
            Self.write("a", 12, 0, 10), Self.write("b", 11, 5, 15),
            Self.read("r1", 10, 0, 3), Self.read("r2", 11, 6, 9), Self.read("r3", 12, 9, 20),
            Self.write("c", 13, 16, 30), Self.read("r4", 13, 25, 26),
        ]).isEmpty)
    }

    @Test func aWriteWithoutAnAnswerMayTakeEffectLate() {
        // u was never answered: it may take effect after w, which was sent long after it.
        #expect(Self.check([Self.write("u", 12, 0, nil), Self.write("w", 11, 100, 110), Self.read("r", 12, 200, 210)]).isEmpty)
    }

    @Test func aLaterWriteWithAnEarlierVersionIsRejected() {
        let problems = Self.check([Self.write("a", 12, 0, 10), Self.write("b", 11, 20, 30)])
        #expect(problems.contains { $0.contains("a (wrote v12") && $0.contains("yet has the later version") })
    }

    @Test func aStaleReadIsRejected() {
        // The write of v12 was answered before the read was sent, which still saw v11.
        let problems = Self.check([Self.write("a", 11, 0, 5), Self.write("b", 12, 6, 10), Self.read("r", 11, 20, 25)])
        #expect(problems.contains { $0.contains("r (read v11") && $0.contains("saw an older version") })
        // And reads do not go back in time either.
        let reads = Self.check([Self.write("a", 11, 0, 5), Self.write("b", 12, 6, 30), Self.read("r1", 12, 7, 8), Self.read("r2", 11, 9, 10)])
        #expect(reads.contains { $0.contains("r2 (read v11") && $0.contains("r1 (read v12") })
    }

    @Test func aReadOfTheFutureIsRejectedByThePlacementAlone() {
        // r saw v12 and was answered before the write of v11 was sent: no pair of the plain
        // rules says so (nothing was answered before r was sent), only the placement does.
        let problems = Self.check([Self.write("a", 12, 0, 50), Self.read("r", 12, 1, 2), Self.write("b", 11, 3, 4)])
        #expect(problems.count == 1)
        #expect(problems.first?.contains("r (read v12") == true && problems.first?.contains("exists only after b (wrote v11") == true)
    }

    @Test func twoWritesOfOneVersionAndAVersionNobodyMadeAreRejected() {
        #expect(Self.check([Self.write("a", 11, 0, 5), Self.write("b", 11, 1, 6)]).contains { $0.contains("made the same version") })
        #expect(Self.check([Self.write("a", 11, 0, 5), Self.read("r", 13, 6, 7)]).contains { $0.contains("no write in the history made") })
        #expect(Self.check([Self.write("a", 9, 0, 5)]).contains { $0.contains("not after the initial one") })
    }
}
