import Essentials
import Foundation
import HTTPTestSupport
import Library
import SQLite
import Storage
import TestThreads
import Testing

@Suite("Transactions, durability and integrity", .ownThreads)
struct TransactionTests {
    /// Everything a reader can see, for before/after comparisons.
    struct Snapshot: Equatable {
        var albums: [Album]
        var version: Int64
        var undo: [UndoCommand]
        var states: [SavedState]
        var report: SQLiteAlbumStore.OrderingReport
    }

    func snapshot(_ store: SQLiteAlbumStore) throws -> Snapshot {
        let (albums, version, states) = try store.read(.default) { reader throws in
            var albums: [Album] = []
            try reader.forEachAlbum { albums.append($0) }
            return (albums, try reader.version(), try reader.states())
        }
        // Drain a copy of the undo stack by popping in a rolled-back transaction.
        var undo: [UndoCommand] = []
        _ = try? store.write(.default) { writer throws in
            while let command = try writer.popUndo() { undo.append(command) }
            throw MarkerError(token: -1)
        }
        return Snapshot(
            albums: albums, version: version, undo: undo, states: states, report: try store.checkConsistency(.default))
    }

    @Test func aThrowingBodyRollsEverythingBackAndItsErrorComesBackUnchanged() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 4)
        try store.write(.default) { writer throws in
            for number in 1...30 as ClosedRange<UInt64> { try writer.insert(Fixtures.album(number), at: Int(number) - 1) }
            _ = try writer.bumpVersion()
            try writer.pushUndo(.remove(id: Fixtures.id(1), title: "Album 1"), limit: 10)
            try writer.saveState(SavedState(client: "a", currentAlbumIndex: 3, albumID: Fixtures.id(4), updatedAt: nil))
        }
        let before = try snapshot(store)
        let countersBefore = store.orderingCounters

        let error = #expect(throws: MarkerError.self) {
            try store.write(.default) { writer throws in
                // Splits (front and middle), merges, renumbering, appends on the lazy tail…
                for number in 100...140 as ClosedRange<UInt64> { try writer.insert(Fixtures.album(number), at: 0) }
                for number in 200...220 as ClosedRange<UInt64> { try writer.insert(Fixtures.album(number), at: 35) }
                for number in 1...20 as ClosedRange<UInt64> { try writer.delete(id: Fixtures.id(number)) }
                try writer.move(id: Fixtures.id(25), to: 0)
                var album = Fixtures.album(26)
                album.title = "Changed"
                try writer.update(album)
                for number in 300...330 as ClosedRange<UInt64> { try writer.insert(Fixtures.album(number), at: try writer.count()) }
                _ = try writer.bumpVersion()
                try writer.pushUndo(.remove(id: Fixtures.id(2), title: "x"), limit: 10)
                _ = try writer.popUndo()
                _ = try writer.popUndo()
                try writer.saveState(SavedState(client: "b", currentAlbumIndex: 0, albumID: nil, updatedAt: nil))
                try writer.deleteAllStates()
                throw MarkerError(token: 42)
            }
        }
        #expect(error == MarkerError(token: 42))
        #expect(store.orderingCounters.bucketSplits > countersBefore.bucketSplits)
        #expect(try snapshot(store) == before)

        // A rolled-back write after a pending append leaves the next write consistent.
        #expect(throws: MarkerError.self) {
            try store.write(.default) { writer throws in
                try writer.insert(Fixtures.album(900), at: try writer.count())
                throw MarkerError(token: 1)
            }
        }
        try store.write(.default) { try $0.insert(Fixtures.album(901), at: try $0.count()) }
        #expect(try snapshot(store).albums == before.albums + [Fixtures.album(901)])
    }

    @Test func deleteAllAlbumsKeepsVersionUndoAndStates() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 4)
        let state = SavedState(client: "default", currentAlbumIndex: 2, albumID: Fixtures.id(3), updatedAt: nil)
        try store.write(.default) { writer throws in
            for number in 1...50 as ClosedRange<UInt64> { try writer.insert(Fixtures.album(number), at: 0) }
            _ = try writer.bumpVersion()
            try writer.pushUndo(.remove(id: Fixtures.id(1), title: "Album 1"), limit: 5)
            try writer.saveState(state)
        }
        try store.write(.default) { writer throws in
            try writer.insert(Fixtures.album(77), at: try writer.count()) // pending tail, then wiped
            try writer.deleteAllAlbums()
            #expect(try writer.count() == 0)
            #expect(try writer.album(at: 0) == nil)
            #expect(try writer.albums(offset: 0, limit: 10).isEmpty)
        }
        #expect(try store.checkConsistency(.default) == .init(albumCount: 0, bucketCount: 0, largestBucket: 0, smallestBucket: 0))
        try store.read(.default) { reader throws in
            #expect(try reader.count() == 0)
            #expect(try reader.version() == 1)
            #expect(try reader.undoDepth() == 1)
            #expect(try reader.state(client: "default") == state)
            #expect(try reader.index(of: Fixtures.id(3)) == nil)
        }
        // The library is usable again, and the same ids may come back.
        try store.write(.default) { writer throws in
            try writer.insert(Fixtures.album(3), at: 0)
            try writer.insert(Fixtures.album(4), at: 0)
        }
        #expect(try Fixtures.allAlbums(store) == [Fixtures.album(4), Fixtures.album(3)])
    }

    @Test func everyWriteIsDurableAcrossCloseAndReopen() throws {
        let directory = try TemporaryDirectory()
        var expected: [Album] = []
        do {
            let store = try Fixtures.store(directory, bucketSize: 8, durability: .full)
            for number in 1...40 as ClosedRange<UInt64> {
                try store.write(.default) { try $0.insert(Fixtures.album(number), at: Int(number) % 7 == 0 ? 0 : try $0.count()) }
                expected.insert(Fixtures.album(number), at: Int(number) % 7 == 0 ? 0 : expected.count)
            }
            try store.write(.default) { writer throws in
                _ = try writer.bumpVersion()
                _ = try writer.bumpVersion()
                try writer.pushUndo(.move(id: Fixtures.id(5), title: "Album 5", index: 4), limit: 10)
                try writer.saveState(SavedState(
                    client: "phone", currentAlbumIndex: 7, albumID: Fixtures.id(8),
                    updatedAt: Timestamp.date(milliseconds: 1_714_566_896_789)))
            }
        }
        let reopened = try Fixtures.store(directory, bucketSize: 8)
        #expect(try Fixtures.allAlbums(reopened) == expected)
        try reopened.read(.default) { reader throws in
            #expect(try reader.version() == 2)
            #expect(try reader.count() == 40)
            #expect(try reader.peekUndo() == .move(id: Fixtures.id(5), title: "Album 5", index: 4))
            #expect(try reader.state(client: "phone")?.updatedAt == Timestamp.date(milliseconds: 1_714_566_896_789))
        }
        _ = try reopened.checkConsistency(.default)
        // Reopening applies no migration twice.
        let connection = try Connection(path: directory.file("library.sqlite"))
        #expect(try Migrator.appliedIdentifiers(in: connection) == SQLiteAlbumStore.migrationIdentifiers)
        #expect(SQLiteAlbumStore.migrationIdentifiers.first == "v1-libraries-buckets-albums-undo-states")
    }

    @Test func versionStartsAtZeroAndBumpsByOne() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory)
        #expect(try store.read(.default) { try $0.version() } == 0)
        #expect(try store.write(.default) { try $0.bumpVersion() } == 1)
        #expect(try store.write(.default) { try $0.bumpVersion() } == 2)
        // A rolled-back bump does not count.
        #expect(throws: MarkerError.self) {
            try store.write(.default) { writer throws in
                #expect(try writer.bumpVersion() == 3)
                throw MarkerError(token: 0)
            }
        }
        #expect(try store.read(.default) { try $0.version() } == 2)
    }

    @Test func aLibraryNeverWrittenReadsAsEmpty() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory)
        let nobody = LibraryID(rawValue: "nobody")
        #expect(throws: LibraryError.libraryNotFound(nobody)) { try store.read(nobody) { try $0.count() } }
        _ = try store.createLibrary(nobody, name: "Nobody")
        try store.read(nobody) { reader throws in
            #expect(try reader.version() == 0)
            #expect(try reader.count() == 0)
            #expect(try reader.album(at: 0) == nil)
            #expect(try reader.albums(offset: 0, limit: 5).isEmpty)
            #expect(try reader.album(id: Fixtures.id(1)) == nil)
            #expect(try reader.index(of: Fixtures.id(1)) == nil)
            #expect(try reader.undoDepth() == 0)
            #expect(try reader.peekUndo() == nil)
            #expect(try reader.states().isEmpty)
            #expect(try reader.state(client: "default") == nil)
            var visited = 0
            try reader.forEachAlbum { _ in visited += 1 }
            #expect(visited == 0)
        }
    }

    @Test func librariesAreIndependent() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 4)
        let other = LibraryID(rawValue: "other")
        _ = try store.createLibrary(other, name: "Other")
        try store.write(.default) { writer throws in
            for number in 1...10 as ClosedRange<UInt64> { try writer.insert(Fixtures.album(number), at: 0) }
            _ = try writer.bumpVersion()
        }
        // The same id may not live in two libraries.
        #expect(throws: StorageError.self) {
            try store.write(other) { writer throws in try writer.insert(Fixtures.album(1, title: "Other copy"), at: 0) }
        }
        try store.write(other) { writer throws in
            try writer.insert(Fixtures.album(51, title: "Other copy"), at: 0)
            try writer.insert(Fixtures.album(50), at: 1)
            try writer.saveState(SavedState(client: "x", currentAlbumIndex: 1, albumID: nil, updatedAt: nil))
        }
        #expect(try Fixtures.allAlbums(store, other) == [Fixtures.album(51, title: "Other copy"), Fixtures.album(50)])
        #expect(try Fixtures.allAlbums(store).count == 10)
        try store.read(.default) { reader throws in
            #expect(try reader.version() == 1)
            #expect(try reader.index(of: Fixtures.id(1)) == 9)
            #expect(try reader.album(id: Fixtures.id(50)) == nil)
            #expect(try reader.states().isEmpty)
        }
        try store.write(other) { try $0.deleteAllAlbums() }
        #expect(try Fixtures.allAlbums(store).count == 10)
        #expect(try store.read(other) { try $0.version() } == 0)
        _ = try store.checkConsistency(.default)
        _ = try store.checkConsistency(other)
    }

    @Test func forEachAlbumStreamsInOrderAndStopsOnAThrow() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 4)
        var model: [Album] = []
        try store.write(.default) { writer throws in
            for number in 1...57 as ClosedRange<UInt64> {
                let index = Int(number * 31 % UInt64(model.count + 1))
                try writer.insert(Fixtures.album(number), at: index)
                model.insert(Fixtures.album(number), at: index)
            }
            // Inside the writer too, with a pending tail.
            try writer.insert(Fixtures.album(58), at: 57)
            model.append(Fixtures.album(58))
            var seen: [Album] = []
            try writer.forEachAlbum { seen.append($0) }
            #expect(seen == model)
        }
        #expect(try Fixtures.allAlbums(store) == model)
        var visited = 0
        let error = #expect(throws: MarkerError.self) {
            try store.read(.default) { reader throws in
                try reader.forEachAlbum { _ in
                    visited += 1
                    if visited == 10 { throw MarkerError(token: 10) }
                }
            }
        }
        #expect(error == MarkerError(token: 10))
        #expect(visited == 10)
    }

    @Test func violationsAreReportedAsStorageErrors() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory)
        try store.write(.default) { try $0.insert(Fixtures.album(1), at: 0) }
        func kind(_ body: (any AlbumStoreWriter) throws -> Void) -> StorageError.Kind? {
            do {
                try store.write(.default, body)
                return nil
            } catch let error as StorageError {
                return error.kind
            } catch {
                return nil
            }
        }
        #expect(kind { try $0.insert(Fixtures.album(2), at: 2) } == .indexOutOfRange)
        #expect(kind { try $0.insert(Fixtures.album(2), at: -1) } == .indexOutOfRange)
        #expect(kind { try $0.insert(Fixtures.album(1), at: 0) } == .duplicateAlbum)
        #expect(kind { try $0.insert(Fixtures.album(1), at: 1) } == .duplicateAlbum)
        #expect(kind { try $0.delete(id: Fixtures.id(9)) } == .albumNotFound)
        #expect(kind { try $0.update(Fixtures.album(9)) } == .albumNotFound)
        #expect(kind { try $0.move(id: Fixtures.id(9), to: 0) } == .albumNotFound)
        #expect(kind { try $0.move(id: Fixtures.id(1), to: 1) } == .indexOutOfRange)
        #expect(try Fixtures.allAlbums(store) == [Fixtures.album(1)])
        _ = try store.checkConsistency(.default)
    }

    @Test func albumFieldsAndTimestampsRoundTripExactly() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory)
        var random = SeededGenerator(seed: 7)
        var albums: [Album] = []
        for number in 1...300 as ClosedRange<UInt64> {
            // Whole milliseconds from 1000 AD to 9999 AD, plus the edges around 1970.
            let millis = number <= 4
                ? [Int64(-1), 0, 1, 999][Int(number) - 1]
                : Int64.random(in: -30_610_224_000_000...253_402_300_799_999, using: &random)
            let date = Timestamp.date(milliseconds: millis)
            albums.append(Album(
                id: Fixtures.randomID(using: &random), title: "Tïtle \(number) 🎵 \"quoted\"", artist: "Ärtist",
                genre: "Jazz", year: number % 2 == 0 ? Int(number) + 1000 : nil,
                coverUrl: number % 3 == 0 ? nil : "https://example.com/c?\(number)&x=1",
                createdAt: date, updatedAt: Timestamp.truncated(Date(timeIntervalSince1970: Double(millis) / 1000 + 0.0004))))
        }
        try store.write(.default) { writer throws in
            for album in albums { try writer.insert(album, at: try writer.count()) }
        }
        let stored = try Fixtures.allAlbums(store)
        #expect(stored == albums)
        for (album, back) in zip(albums, stored) {
            #expect(Timestamp.milliseconds(back.createdAt) == Timestamp.milliseconds(album.createdAt))
            #expect(back.createdAt == album.createdAt)
        }
    }

    @Test func readersSeeConsistentSnapshotsWhileAWriterAppends() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 8)
        let writes = 200
        DispatchQueue.concurrentPerform(iterations: 3) { worker in
            do {
                if worker == 0 {
                    for number in 1...writes {
                        try store.write(.default) { writer throws in
                            try writer.insert(Fixtures.album(UInt64(number)), at: number % 3 == 0 ? 0 : try writer.count())
                            _ = try writer.bumpVersion()
                        }
                    }
                } else {
                    for _ in 0..<300 {
                        try store.read(.default) { reader throws in
                            let count = try reader.count()
                            #expect(try reader.version() == Int64(count))
                            var seen = 0
                            try reader.forEachAlbum { _ in seen += 1 }
                            #expect(seen == count)
                            if count > 0 { #expect(try reader.album(at: count - 1) != nil) }
                        }
                    }
                }
            } catch {
                Issue.record(error)
            }
        }
        #expect(try store.checkConsistency(.default).albumCount == writes)
    }
}

@Suite("Checkpointing", .ownThreads)
struct CheckpointingTests {
    @Test func theBackgroundThreadCheckpointsAfterCommits() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteAlbumStore(
            path: directory.file("c.sqlite"),
            configuration: .init(readerCount: 1, checkpointing: .background(interval: .seconds(60), wakeAfterWrites: 10)))
        for number in 1...30 as ClosedRange<UInt64> {
            try store.write(.default) { try $0.insert(Fixtures.album(number), at: 0) }
        }
        // Woken by the commits, not by the (one minute) timer.
        #expect(eventually { store.backgroundCheckpointCount > 0 })
        #expect(try Fixtures.allAlbums(store).count == 30)
    }

    @Test func theCheckpointThreadRunsAtTheLowestPriority() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteAlbumStore(path: directory.file("p.sqlite"), configuration: .init(readerCount: 1))
        try store.write(.default) { try $0.insert(Fixtures.album(1), at: 0) }
        // The nice value of each thread named like the checkpointer (field 19 of
        // /proc/self/task/<tid>/stat). Other tests' stores may have theirs too.
        var niceValues: [Int] = []
        // A thread that has just started may not have lowered itself yet.
        try eventually {
            niceValues = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap { tid in
                guard let comm = try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8),
                    comm.hasPrefix("bl-checkpoint"),
                    let stat = try? String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8),
                    let close = stat.lastIndex(of: ")")
                else { return nil }
                let fields = stat[stat.index(after: close)...].split(separator: " ")  // fields[0] is field 3
                return fields.count > 16 ? Int(fields[16]) : nil
            }
            return !niceValues.isEmpty && niceValues.allSatisfy { $0 == 19 }
        }
        #expect(!niceValues.isEmpty)
        #expect(niceValues.allSatisfy { $0 == 19 }, "nice values: \(niceValues)")
        _ = store
    }

    @Test func aCheckpointThreadThatFallsBehindLeavesTheWALBounded() throws {
        let directory = try TemporaryDirectory()
        // The thread never wakes (an hour's timer, no commit count): only the fallback can act.
        let store = try SQLiteAlbumStore(
            path: directory.file("f.sqlite"),
            configuration: .init(
                readerCount: 1,
                checkpointing: .background(interval: .seconds(3600), wakeAfterWrites: .max, fallbackFrames: 50)))
        for number in 1...400 as ClosedRange<UInt64> {
            try store.write(.default) { try $0.insert(Fixtures.album(number), at: 0) }
        }
        let walBytes = try #require(
            try FileManager.default.attributesOfItem(atPath: directory.file("f.sqlite-wal"))[.size] as? Int)
        // 400 commits of several pages each would be megabytes; the fallback restarts the WAL
        // after about 50 pages.
        #expect(walBytes < 150 * 4_120, "WAL is \(walBytes) bytes")
        #expect(store.backgroundCheckpointCount == 0)
        #expect(try Fixtures.allAlbums(store).count == 400)
    }

    @Test func automaticCheckpointingWorksToo() throws {
        let directory = try TemporaryDirectory()
        do {
            let store = try SQLiteAlbumStore(
                path: directory.file("a.sqlite"), configuration: .init(readerCount: 0, checkpointing: .automatic))
            try store.write(.default) { writer throws in
                for number in 1...2000 as ClosedRange<UInt64> { try writer.insert(Fixtures.album(number), at: 0) }
            }
            #expect(store.backgroundCheckpointCount == 0)
        }
        // Closed cleanly: the last connection folded the WAL away.
        #expect(!FileManager.default.fileExists(atPath: directory.file("a.sqlite-wal")))
        let reopened = try SQLiteAlbumStore(path: directory.file("a.sqlite"))
        #expect(try reopened.read(.default) { try $0.count() } == 2000)
    }
}
