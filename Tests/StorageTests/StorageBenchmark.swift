import Foundation
import Library
import Storage
import Testing

/// Not a test of speed (nothing here asserts a time): builds a 1M-album store and prints how
/// long the ordering-sensitive operations take. Runs only with `BLUELIBRARY_STORAGE_BENCH=1`,
/// best in release: `BLUELIBRARY_STORAGE_BENCH=1 swift test -c release --filter StorageBenchmark`.
///
/// Optional: `BLUELIBRARY_STORAGE_BENCH_ALBUMS` (default 1000000),
/// `BLUELIBRARY_STORAGE_BENCH_BUCKET` (default: the store's default bucket size),
/// `BLUELIBRARY_STORAGE_BENCH_CACHE_KIB` (writer page cache), `BLUELIBRARY_STORAGE_BENCH_CHECKPOINT=automatic`
/// (SQLite's in-commit checkpoints instead of the background thread),
/// `BLUELIBRARY_STORAGE_BENCH_SEQUENTIAL_IDS=1` (ids in list order instead of random),
/// `BLUELIBRARY_STORAGE_BENCH_IMPORT_ONLY=1` (stop after the bulk append),
/// `BLUELIBRARY_STORAGE_BENCH_RAW=1` (also time the same inserts through the bare wrapper).
@Suite("Storage benchmark", .enabled(if: ProcessInfo.processInfo.environment["BLUELIBRARY_STORAGE_BENCH"] == "1"))
struct StorageBenchmark {
    let environment = ProcessInfo.processInfo.environment

    @Test func oneMillionAlbums() throws {
        let albumCount = Int(environment["BLUELIBRARY_STORAGE_BENCH_ALBUMS"] ?? "") ?? 1_000_000
        var configuration = SQLiteAlbumStore.Configuration()
        if let bucket = Int(environment["BLUELIBRARY_STORAGE_BENCH_BUCKET"] ?? "") { configuration.bucketSize = bucket }
        if let cache = Int(environment["BLUELIBRARY_STORAGE_BENCH_CACHE_KIB"] ?? "") { configuration.writerCacheKiB = cache }
        if environment["BLUELIBRARY_STORAGE_BENCH_CHECKPOINT"] == "automatic" { configuration.checkpointing = .automatic }
        let sequential = environment["BLUELIBRARY_STORAGE_BENCH_SEQUENTIAL_IDS"] == "1"
        let importOnly = environment["BLUELIBRARY_STORAGE_BENCH_IMPORT_ONLY"] == "1"
        let directory = try TemporaryDirectory()
        let path = directory.file("bench.sqlite")
        var random = SeededGenerator(seed: 2024)
        print("storage bench: \(albumCount) albums, bucket size \(configuration.bucketSize), writer cache \(configuration.writerCacheKiB) KiB, \(sequential ? "sequential" : "random") ids, checkpointing \(configuration.checkpointing)")

        // Album generation alone, to separate it from the store's cost.
        let generationStart = ContinuousClock.now
        var checksum = 0
        for number in 0..<albumCount {
            checksum &+= Self.album(number, sequential: sequential, using: &random).title.utf8.count
        }
        let generation = ContinuousClock.now - generationStart

        // Bulk append in one transaction: what an archive import does.
        random = SeededGenerator(seed: 2024)
        var sampleIDs: [AlbumID] = []
        var store: SQLiteAlbumStore? = try SQLiteAlbumStore(path: path, configuration: configuration)
        let importStart = ContinuousClock.now
        try store!.write(.default) { writer in
            for number in 0..<albumCount {
                let album = Self.album(number, sequential: sequential, using: &random)
                if number % 499 == 0 { sampleIDs.append(album.id) }
                try writer.insert(album, at: number)
            }
        }
        let importTime = ContinuousClock.now - importStart
        print("bulk append \(albumCount) (one transaction): \(Self.format(importTime)); album generation alone \(Self.format(generation)) (checksum \(checksum))")
        let fileSize = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        let walSize = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
        print("database file \(fileSize / 1_048_576) MiB + WAL \(walSize / 1_048_576) MiB right after the commit")
        if importOnly { return }

        // Start to ready on an existing 1M store.
        store = nil
        let openStart = ContinuousClock.now
        let reopened = try SQLiteAlbumStore(path: path, configuration: configuration)
        let firstCount = try reopened.read(.default) { try $0.count() }
        print("reopen + first count(): \(Self.format(ContinuousClock.now - openStart)) (count \(firstCount))")
        let report = try reopened.checkConsistency(.default)
        print("buckets: \(report.bucketCount), largest \(report.largestBucket), smallest \(report.smallestBucket)")

        var next = albumCount
        func fresh() -> Album {
            defer { next += 1 }
            return Self.album(next, using: &random)
        }
        let middle = albumCount / 2
        let rounds = 1000

        try Self.measure("insert at 0 (own transaction)", rounds) {
            let album = fresh()
            try reopened.write(.default) { try $0.insert(album, at: 0) }
        }
        try Self.measure("delete at 0 (album(at: 0) + delete, own transaction)", rounds) {
            try reopened.write(.default) { writer in
                let album = try writer.album(at: 0)!
                try writer.delete(id: album.id)
            }
        }
        try Self.measure("insert at 0 + bumpVersion + pushUndo (facade-like)", rounds) {
            let album = fresh()
            try reopened.write(.default) { writer in
                try writer.insert(album, at: 0)
                _ = try writer.bumpVersion()
                try writer.pushUndo(.remove(id: album.id, title: album.title), limit: 100)
            }
        }
        try Self.measure("delete at 0 + bumpVersion + pushUndo (facade-like)", rounds) {
            try reopened.write(.default) { writer in
                let album = try writer.album(at: 0)!
                try writer.delete(id: album.id)
                _ = try writer.bumpVersion()
                try writer.pushUndo(.reinsert(album: album, index: 0), limit: 100)
            }
        }
        try Self.measure("insert at \(middle) (own transaction)", rounds) {
            let album = fresh()
            try reopened.write(.default) { try $0.insert(album, at: middle) }
        }
        try Self.measure("move \(middle) -> 0 (own transaction)", rounds) {
            try reopened.write(.default) { writer in
                let album = try writer.album(at: middle)!
                try writer.move(id: album.id, to: 0)
            }
        }
        try Self.measure("album(at: \(middle)) (own read)", 2 * rounds) {
            _ = try reopened.read(.default) { try $0.album(at: middle) }
        }
        try Self.measure("album(at: random) (own read)", 2 * rounds) {
            let index = Int.random(in: 0..<albumCount, using: &random)
            _ = try reopened.read(.default) { try $0.album(at: index) }
        }
        try Self.measure("index(of: random id) (own read)", 2 * rounds) {
            let id = sampleIDs.randomElement(using: &random)!
            _ = try reopened.read(.default) { try $0.index(of: id) }
        }
        try Self.measure("albums(offset: \(middle), limit: 50) (own read)", rounds) {
            _ = try reopened.read(.default) { try $0.albums(offset: middle, limit: 50) }
        }
        try Self.measure("albums(offset: 0, limit: 50) (own read)", rounds) {
            _ = try reopened.read(.default) { try $0.albums(offset: 0, limit: 50) }
        }
        try Self.measure("count() (own read)", rounds) {
            _ = try reopened.read(.default) { try $0.count() }
        }

        let scanStart = ContinuousClock.now
        var scanned = 0
        try reopened.read(.default) { reader in try reader.forEachAlbum { _ in scanned += 1 } }
        let scan = ContinuousClock.now - scanStart
        print("forEachAlbum over \(scanned): \(Self.format(scan)) (\(Int(Double(scanned) / Self.seconds(scan))) albums/s)")

        // PUT /archive over an existing library: wipe and append everything in one transaction.
        let replaceStart = ContinuousClock.now
        try reopened.write(.default) { writer in
            try writer.deleteAllAlbums()
            for number in 0..<albumCount {
                try writer.insert(Self.album(number, sequential: sequential, using: &random), at: number)
            }
        }
        print("replace import (deleteAllAlbums + append \(albumCount), one transaction): \(Self.format(ContinuousClock.now - replaceStart))")

        let wipeStart = ContinuousClock.now
        try reopened.write(.default) { try $0.deleteAllAlbums() }
        print("deleteAllAlbums of \(albumCount): \(Self.format(ContinuousClock.now - wipeStart))")
        print("ordering counters: \(reopened.orderingCounters)")
    }

    // MARK: - Helpers

    static func album(_ number: Int, sequential: Bool = false, using random: inout SeededGenerator) -> Album {
        let millis = 1_600_000_000_000 + Int64(number) * 37
        return Album(
            id: sequential ? Fixtures.id(UInt64(number) + 1) : Fixtures.randomID(using: &random), title: "Album number \(number)", artist: "Artist \(number % 5003)",
            genre: ["Pop", "Rock", "Jazz", "Classical"][number % 4], year: 1950 + number % 75,
            coverUrl: "https://covers.example.com/album/\(number)/cover-large.png",
            createdAt: Timestamp.date(milliseconds: millis), updatedAt: Timestamp.date(milliseconds: millis))
    }

    static func measure(_ name: String, _ rounds: Int, _ body: () throws -> Void) throws {
        var samples: [Duration] = []
        samples.reserveCapacity(rounds)
        for _ in 0..<rounds {
            let start = ContinuousClock.now
            try body()
            samples.append(ContinuousClock.now - start)
        }
        samples.sort()
        let p50 = samples[samples.count / 2]
        let p99 = samples[min(samples.count - 1, samples.count * 99 / 100)]
        print("\(name): p50 \(format(p50)), p99 \(format(p99)), max \(format(samples.last!)) (n=\(rounds))")
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func format(_ duration: Duration) -> String {
        let value = seconds(duration)
        if value >= 1 { return String(format: "%.2f s", value) }
        if value >= 0.001 { return String(format: "%.2f ms", value * 1000) }
        return String(format: "%.1f µs", value * 1_000_000)
    }
}

import SQLite

extension StorageBenchmark {
    /// The same rows inserted through the bare wrapper (no store logic), to see what the
    /// store adds on top of SQLite itself.
    @Test func rawInsertBaseline() throws {
        guard environment["BLUELIBRARY_STORAGE_BENCH_RAW"] == "1" else { return }
        let albumCount = Int(environment["BLUELIBRARY_STORAGE_BENCH_ALBUMS"] ?? "") ?? 1_000_000
        let sequential = environment["BLUELIBRARY_STORAGE_BENCH_SEQUENTIAL_IDS"] == "1"
        let directory = try TemporaryDirectory()
        let path = directory.file("raw.sqlite")
        _ = try SQLiteAlbumStore(path: path)
        let connection = try Connection(path: path)
        try connection.run("PRAGMA cache_size = -32768")
        try connection.run("INSERT INTO libraries (name) VALUES ('default')")
        var random = SeededGenerator(seed: 2024)
        let start = ContinuousClock.now
        try connection.transaction(.immediate) { db in
            for number in 0..<albumCount {
                let album = Self.album(number, sequential: sequential, using: &random)
                try db.run("""
                    INSERT INTO albums (library, bucket, pos, album_id, title, artist, genre, year, cover_url, created_at, updated_at)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                    """, [
                    .integer(1), .integer(Int64(number / 512)), .integer(Int64(number % 512) << 32),
                    .text(album.id.rawValue), .text(album.title), .text(album.artist), .text(album.genre),
                    .integer(Int64(album.year!)), .text(album.coverUrl!), .integer(0), .integer(0),
                ])
            }
        }
        print("raw wrapper insert of \(albumCount) (\(sequential ? "sequential" : "random") ids): \(Self.format(ContinuousClock.now - start))")
    }
}
