@testable import BlueLibraryAPI
import Foundation
import HTTPTestSupport
import Glibc
import Library
import SQLite
import Storage
import TestThreads
import Testing

/// A full volume. Runs on a small tmpfs the test mounts (tests run as root); skipped, with that
/// reason, where mounting is not permitted.
@Suite("Disk full", .enabled(if: TmpfsVolume.canMount, "needs to mount a tmpfs (root in a container that allows it)"), .ownThreads)
struct DiskFullTests {
    @Test func aFullDiskRefusesWritesKeepsReadsLosesNothingAndRecoversByItself() throws {
        let volume = try TmpfsVolume(bytes: 4 << 20)
        var acknowledged: [AlbumID] = []
        var filler: String
        do {
            let store = try SQLiteAlbumStore(
                path: volume.path + "/full.sqlite",
                configuration: .init(readerCount: 2, diskReserveBytes: 512 << 10))
            #expect(store.hasDiskReserve)
            let facade = LibraryFacade(store: store, clock: { Date() }, ids: .random(clock: { Date() }))
            // Leave about 300 KB free, then add until the disk is full.
            filler = try volume.fill(leaving: 300 << 10)
            var failure: (any Error)?
            for step in 0..<2000 {
                do {
                    acknowledged.append(try facade.add(AlbumInput(title: "Album \(step)", artist: "A")).album.id)
                } catch {
                    failure = error
                    break
                }
            }
            let error = try #require(failure, "the volume never filled up")
            guard case .storage(let underlying) = error as? LibraryError else {
                Issue.record("expected a storage error, got \(error)")
                return
            }
            #expect(SQLiteAlbumStore.isDiskFull(underlying.error), "\(underlying)")
            #expect(store.isDiskFull)
            #expect(!store.hasDiskReserve)
            // The reserve gave the checkpoint room: the WAL was folded in and truncated.
            #expect(volume.size(of: "full.sqlite-wal") == 0)
            // Reads go on, and see every acknowledged album.
            #expect(try facade.count() == acknowledged.count)
            // Space comes back: writes resume by themselves.
            try FileManager.default.removeItem(atPath: filler)
            for step in 0..<20 {
                acknowledged.append(try facade.add(AlbumInput(title: "After \(step)", artist: "A")).album.id)
            }
            #expect(!store.isDiskFull)
            #expect(store.hasDiskReserve)
        }
        // Nothing acknowledged was lost, also after a restart.
        let reopened = try SQLiteAlbumStore(path: volume.path + "/full.sqlite", configuration: .init(diskReserveBytes: 512 << 10))
        let stored = try Fixtures.allAlbums(reopened).map(\.id)
        #expect(stored == acknowledged)
        #expect(try reopened.checkConsistency(.default).albumCount == acknowledged.count)
    }

    @Test func anIOErrorFromENOSPCOrEDQUOTCountsAsAFullDisk() {
        #expect(SQLiteError(extendedCode: 13, message: "full").isFull)
        #expect(SQLiteError(extendedCode: 10 | (3 << 8), message: "disk I/O error", systemErrno: ENOSPC).isFull)
        #expect(SQLiteError(extendedCode: 10 | (3 << 8), message: "disk I/O error", systemErrno: EDQUOT).isFull)
        #expect(!SQLiteError(extendedCode: 10 | (3 << 8), message: "disk I/O error", systemErrno: EIO).isFull)
    }
}
