@testable import BlueLibraryAPI
import Dispatch
import Foundation
import HTTPTestSupport
import Library
import SQLite
import Storage
import Synchronization
import TestThreads
import Testing

/// The WAL must stay bounded under a steady load, which a passive checkpoint alone cannot do: it
/// never lets the WAL restart while commits keep coming (or readers of older snapshots stay open).
/// These run with the server's default configuration; with passive checkpoints alone, the first
/// reaches about 87 MB and the second about 90 MB.
@Suite("WAL stays bounded", .ownThreads)
struct WALBoundTests {
    /// The bound the default configuration promises: `fallbackFrames` (8192 pages of 4 KiB
    /// plus a 24-byte frame header each) and one commit's frames on top.
    static let bound = (8192 + 64) * 4_120

    static func walSize(_ store: SQLiteAlbumStore) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: store.path + "-wal"))?[.size] as? Int) ?? 0
    }

    static func facade(_ store: SQLiteAlbumStore) -> LibraryFacade {
        LibraryFacade(store: store, clock: { Date() }, ids: .random(clock: { Date() }))
    }

    @Test func oneClientAddingBackToBackKeepsTheWALBounded() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteAlbumStore(path: directory.file("w.sqlite"))
        let facade = Self.facade(store)
        var largest = 0
        for step in 0..<1500 {
            _ = try facade.add(AlbumInput(title: "T\(step)", artist: "A"))
            largest = max(largest, Self.walSize(store))
        }
        print("WAL largest (one client): \(largest) bytes, restarts \(store.walRestartCounts) checkpoints \(store.backgroundCheckpointCount)")
        #expect(largest <= Self.bound, "WAL reached \(largest) bytes")
        #expect(try facade.count() == 1500)
        let restarts = store.walRestartCounts
        #expect(restarts.requested + restarts.fallback > 0)
    }

    @Test func readersAndWritersTogetherKeepTheWALBounded() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteAlbumStore(path: directory.file("w.sqlite"))
        let facade = Self.facade(store)
        let writersLeft = Atomic<Int>(2)
        let largest = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 5) { role in
            do {
                if role < 2 {
                    defer { writersLeft.subtract(1, ordering: .releasing) }
                    for step in 0..<800 {
                        if step % 4 == 3 {
                            try facade.delete(at: 0)
                        } else {
                            _ = try facade.add(AlbumInput(title: "W\(role)-\(step)", artist: "A"), at: step % 7 == 0 ? 0 : nil)
                        }
                        largest.max(Self.walSize(store), ordering: .relaxed)
                    }
                } else {
                    while writersLeft.load(ordering: .acquiring) > 0 {
                        _ = try facade.page(PageRequest())
                        _ = try facade.count()
                    }
                }
            } catch {
                failures.withLock { $0.append("\(role): \(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(largest.load(ordering: .relaxed) <= Self.bound, "WAL reached \(largest.load(ordering: .relaxed)) bytes")
        #expect(try facade.count() == 800)
    }
}
