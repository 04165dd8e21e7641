import Essentials
import Foundation
import HTTPTestSupport
import Library
import Storage
import TestThreads
import Testing

/// Not a test of speed (nothing here asserts a time): prints how long deleting a large library
/// takes, beside a library that keeps its albums (rows deleted by library) and alone (the
/// table emptied wholesale). Runs only with `BLUELIBRARY_STORAGE_BENCH=1`;
/// `BLUELIBRARY_STORAGE_BENCH_ALBUMS` sets the size of the deleted library (default 100000).
@Suite("Catalog benchmark", .enabled(if: ProcessInfo.processInfo.environment["BLUELIBRARY_STORAGE_BENCH"] == "1"), .ownThreads)
struct CatalogBenchmark {
    @Test(arguments: [10_000, 0])
    func deleteALargeLibrary(othersHold: Int) throws {
        let environment = ProcessInfo.processInfo.environment
        let albumCount = Int(environment["BLUELIBRARY_STORAGE_BENCH_ALBUMS"] ?? "") ?? 100_000
        let directory = try TemporaryDirectory()
        let store = try SQLiteAlbumStore(path: directory.file("bench.sqlite"))
        var random = SeededGenerator(seed: 13)
        let big = LibraryID(rawValue: "big")
        _ = try store.createLibrary(big, name: "Big")
        for (library, count) in [(big, albumCount), (LibraryID.default, othersHold)] where count > 0 {
            try store.write(library) { writer in
                for index in 0..<count {
                    var album = Fixtures.album(UInt64(index))
                    album.id = Fixtures.randomID(using: &random)
                    try writer.insert(album, at: index)
                }
            }
        }
        let clock = ContinuousClock()
        let took = try clock.measure { try store.deleteLibrary(big) }
        print("catalog bench: deleting a library of \(albumCount) albums beside \(othersHold) others took \(took)")
        #expect(try store.read(.default) { try $0.count() } == othersHold)
    }
}
