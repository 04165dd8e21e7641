import Essentials
import Foundation
import HTTPTestSupport
import Library
import Storage
import TestThreads
import Testing

/// `PUT /state?client=` must not create a row for every new client name without limit.
@Suite("Saved states are bounded", .ownThreads)
struct SavedStateBoundTests {
    static func state(_ client: String, at millis: Int64) -> SavedState {
        SavedState(client: client, currentAlbumIndex: 0, albumID: nil,
                   updatedAt: Timestamp.date(milliseconds: 1_700_000_000_000 + millis))
    }

    @Test func newClientsPastTheLimitEvictTheLeastRecentlySaved() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteAlbumStore(path: directory.file("s.sqlite"), configuration: .init(maxSavedStates: 50))
        for number in 0..<40 {
            try store.write(.default) { try $0.saveState(Self.state("c\(number)", at: Int64(number))) }
        }
        // c0 is saved again: now the most recent of the first forty.
        try store.write(.default) { try $0.saveState(Self.state("c0", at: 1_000)) }
        for number in 40..<200 {
            try store.write(.default) { try $0.saveState(Self.state("c\(number)", at: Int64(number) + 2_000)) }
        }
        let kept = try store.read(.default) { try $0.states() }.map(\.client)
        #expect(kept.count == 50)
        #expect(Set(kept) == Set((150..<200).map { "c\($0)" }))
        #expect(try store.read(.default) { try $0.state(client: "c199") } != nil)
    }

    @Test func theDefaultLimitIsTenThousandAndReSavingAnOldClientKeepsIt() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteAlbumStore(path: directory.file("s.sqlite"))
        try store.write(.default) { writer throws in
            for number in 0..<10_000 { try writer.saveState(Self.state("c\(number)", at: Int64(number))) }
            try writer.saveState(Self.state("c0", at: 20_000))
        }
        try store.write(.default) { try $0.saveState(Self.state("newcomer", at: 30_000)) }
        let kept = Set(try store.read(.default) { try $0.states() }.map(\.client))
        // The oldest go, a hundredth of the limit at a time; c0 was saved last, so it stays.
        #expect(kept.count == 10_000 - 99)
        #expect(kept.contains("c0") && kept.contains("newcomer"))
        #expect(!kept.contains("c1") && !kept.contains("c100") && kept.contains("c101"))
    }
}
