@testable import BlueLibraryAPI
import Essentials
import Foundation
import HTTPTestSupport
import Library
import Storage
import TestThreads
import Testing

@Suite("Change log (v4)", .ownThreads)
struct ChangeLogTests {
    static let t0 = Timestamp.date(milliseconds: 1_700_000_000_000)

    static func change(_ version: Int64, _ kind: LibraryChange.Kind = .added, at seconds: Double = 0) -> LibraryChange {
        LibraryChange(
            version: version, kind: kind, id: kind == .replaced ? nil : Fixtures.id(UInt64(version)),
            index: kind == .replaced ? nil : Int(version % 7), recordedAt: t0.addingTimeInterval(seconds))
    }

    @Test func migrationIsAppendedAfterV3() {
        #expect(Array(SQLiteAlbumStore.migrationIdentifiers.prefix(4)) == [
            "v1-libraries-buckets-albums-undo-states", "v2-idempotency-keys", "v3-sort-indexes", "v4-change-log",
        ])
    }

    @Test func recordsReadsAndSurvivesReopen() throws {
        let directory = try TemporaryDirectory()
        do {
            let store = try Fixtures.store(directory)
            #expect(try store.read(.default) { try $0.oldestRetainedChange() } == nil)
            try store.write(.default) { writer in
                try writer.recordChange(Self.change(1, .replaced))
                try writer.recordChange(Self.change(2, .added))
                try writer.recordChange(Self.change(3, .deleted))
            }
            // A rolled-back change is gone.
            #expect(throws: MarkerError.self) {
                try store.write(.default) { writer in
                    try writer.recordChange(Self.change(4, .moved))
                    throw MarkerError(token: 4)
                }
            }
            // Another library has its own feed.
            _ = try store.createLibrary(LibraryID(rawValue: "other"), name: "Other")
            try store.write(LibraryID(rawValue: "other")) { try $0.recordChange(Self.change(1, .updated)) }
        }
        let store = try Fixtures.store(directory)
        try store.read(.default) { reader throws in
            #expect(try reader.changes(after: 0, limit: 10) == [Self.change(1, .replaced), Self.change(2), Self.change(3, .deleted)])
            #expect(try reader.changes(after: 1, limit: 1) == [Self.change(2)])
            #expect(try reader.changes(after: 3, limit: 10) == [])
            #expect(try reader.oldestRetainedChange() == Self.change(1, .replaced))
        }
        #expect(try store.read(LibraryID(rawValue: "other")) { try $0.changes(after: 0, limit: 10) } == [Self.change(1, .updated)])
        // A version recorded twice is an integrity error, not a silent overwrite.
        #expect(throws: (any Error).self) { try store.write(.default) { try $0.recordChange(Self.change(3)) } }
    }

    @Test func pruneRemovesOnlyAnExpiredPrefixWithinTheLimit() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory)
        try store.write(.default) { writer in
            // Versions 1-4 are old, 5 is young, 6-8 old again (a clock that went back).
            for version in Int64(1)...8 {
                try writer.recordChange(Self.change(version, at: version == 5 ? 1000 : 0))
            }
        }
        let cutoff = Self.t0.addingTimeInterval(10)
        func versions() throws -> [Int64] { try store.read(.default) { try $0.changes(after: 0, limit: 100).map(\.version) } }
        try store.write(.default) { try $0.pruneChanges(throughVersion: 8, recordedBefore: cutoff, limit: 2) }
        #expect(try versions() == [3, 4, 5, 6, 7, 8])
        try store.write(.default) { try $0.pruneChanges(throughVersion: 3, recordedBefore: cutoff, limit: 10) }
        #expect(try versions() == [4, 5, 6, 7, 8])
        // Stops at the young 5: no hole is ever made.
        try store.write(.default) { try $0.pruneChanges(throughVersion: 8, recordedBefore: cutoff, limit: 10) }
        #expect(try versions() == [5, 6, 7, 8])
        #expect(try store.read(.default) { try $0.oldestRetainedChange()?.version } == 5)
    }

    /// Random mutations through the facade on SQLite; replaying the feed on a list of ids
    /// gives exactly the stored order, and the versions are consecutive.
    @Test func feedReplayAgreesWithTheData() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 4)
        let facade = LibraryFacade(store: store, clock: { Date() }, ids: .random(clock: { Date() }))
        try facade.seedIfEmpty()
        let seeded = try Fixtures.allAlbums(store).map(\.id)
        var random = SeededGenerator(seed: 44)
        for step in 0..<300 {
            let count = try facade.count()
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<4:
                _ = try facade.add(
                    AlbumInput(title: "T\(step)", artist: "A"),
                    at: Int.random(in: 0...count, using: &random))
            case 4..<6 where count > 0:
                try facade.delete(at: Int.random(in: 0..<count, using: &random))
            case 6..<8 where count > 1:
                let album = try facade.album(at: Int.random(in: 0..<count, using: &random)).album
                _ = try facade.move(id: album.id, to: Int.random(in: 0..<count, using: &random))
            case 8 where count > 0:
                let album = try facade.album(at: Int.random(in: 0..<count, using: &random)).album
                _ = try facade.update(id: album.id, patch: AlbumPatch(year: .set(1900 + step)))
            default:
                _ = try? facade.undo()
            }
        }
        var ids: [AlbumID] = []
        var since: Int64 = 0
        var versions: [Int64] = []
        while true {
            let page = try facade.changes(since: since, limit: 37)
            for change in page.changes {
                versions.append(change.version)
                switch change.kind {
                case .replaced:
                    #expect(change.version == 1) // the seeding: a client reloads here
                    ids = seeded
                case .added: ids.insert(change.id!, at: change.index!)
                case .deleted:
                    #expect(ids[change.index!] == change.id!)
                    ids.remove(at: change.index!)
                case .moved:
                    ids.removeAll { $0 == change.id! }
                    ids.insert(change.id!, at: change.index!)
                case .updated: #expect(ids[change.index!] == change.id!)
                }
            }
            since = page.next
            if !page.more { break }
        }
        let version = try facade.version()
        #expect(versions == Array(1...version))
        #expect(ids == (try Fixtures.allAlbums(store).map(\.id)))
    }
}
