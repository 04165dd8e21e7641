import Essentials
import Foundation
import HTTPTestSupport
import Library
import SQLite
import Storage
import TestThreads
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
/// `BLUELIBRARY_STORAGE_BENCH_RAW=1` (also time the same inserts through the bare wrapper),
/// `BLUELIBRARY_STORAGE_BENCH_DROP_INDEXES=albums_by_title_sort,...` (drop these indexes before the
/// import, to see what each costs it).
///
/// `pagesAtDepth` (same switch) times filtered/sorted keyset pages at 1M: page 1 against page
/// 10,000 for every sort, both directions, unfiltered and with one filter.
@Suite("Storage benchmark", .enabled(if: ProcessInfo.processInfo.environment["BLUELIBRARY_STORAGE_BENCH"] == "1"), .ownThreads)
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
        if let names = environment["BLUELIBRARY_STORAGE_BENCH_DROP_INDEXES"], !names.isEmpty {
            // To measure what an index costs the import: the same run without it.
            let connection = try Connection(path: path)
            for name in names.split(separator: ",") { try connection.run("DROP INDEX \(name)") }
            print("dropped indexes before the import: \(names)")
        }
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
        duration.seconds
    }

    static func format(_ duration: Duration) -> String {
        let value = seconds(duration)
        if value >= 1 { return String(format: "%.2f s", value) }
        if value >= 0.001 { return String(format: "%.2f ms", value * 1000) }
        return String(format: "%.1f µs", value * 1_000_000)
    }
}

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

extension StorageBenchmark {
    /// Page 1 against page 10,000 (limit 50, reached through the anchor a client's cursor
    /// would carry: the last album of page 9,999) for every sort and direction, unfiltered and
    /// filtered. Keyset pages should cost the same at any depth.
    @Test func pagesAtDepth() throws {
        let albumCount = Int(environment["BLUELIBRARY_STORAGE_BENCH_ALBUMS"] ?? "") ?? 1_000_000
        let rounds = Int(environment["BLUELIBRARY_STORAGE_BENCH_PAGE_ROUNDS"] ?? "") ?? 300
        let limit = 50
        let depth = min(10_000, albumCount / (2 * limit))
        let directory = try TemporaryDirectory()
        let store = try SQLiteAlbumStore(path: directory.file("pages.sqlite"))
        var random = SeededGenerator(seed: 2024)
        let importStart = ContinuousClock.now
        try store.write(.default) { writer in
            for number in 0..<albumCount { try writer.insert(Self.album(number, using: &random), at: number) }
        }
        print("pages at depth: imported \(albumCount) in \(Self.format(ContinuousClock.now - importStart)); page \(depth) of \(limit)")
        let filters: [(String, AlbumFilter)] = [("none", .all), ("yearFrom=1960 (87%)", AlbumFilter(yearFrom: 1960)),
                                                ("genre=rock (25%)", AlbumFilter(genre: "rock"))]
        print("| sort | filter | page 1 p50 | page 1 p99 | page N | page N p50 | page N p99 | .offset to page N p50 |")
        print("|---|---|---|---|---|---|---|---|")
        for (name, filter) in filters {
            for sort in AlbumSort.Field.allCases.flatMap({ [AlbumSort($0), AlbumSort($0, descending: true)] }) {
                // The anchor a cursor to page `depth` carries: the last album of page depth - 1
                // (a shallower page when the filter matches too few).
                let matches = try store.read(.default) { try $0.count(matching: filter) }
                let page = min(depth, matches / (2 * limit))
                let skip = (page - 1) * limit - 1
                guard let last = try store.read(.default, {
                    try $0.albums(matching: filter, sort: sort, from: .offset(skip), limit: 1)
                })?.first else {
                    print("| \(sort) | \(name) | (fewer than \(skip + 1) matches) |")
                    continue
                }
                let anchor: SortAnchor = sort.field == .position
                    ? .afterAlbum(last.id) : .afterValue(SortValue.of(last, for: sort.field, articles: .standard)!, last.id)
                let first = try Self.samples(rounds) {
                    let page = try store.read(.default) { try $0.albums(matching: filter, sort: sort, from: .start, limit: limit) }
                    precondition(page?.count == limit)
                }
                let deep = try Self.samples(rounds) {
                    let page = try store.read(.default) { try $0.albums(matching: filter, sort: sort, from: anchor, limit: limit) }
                    precondition(page?.count == limit)
                }
                let offset = try Self.samples(max(3, rounds / 50)) {
                    _ = try store.read(.default) { try $0.albums(matching: filter, sort: sort, from: .offset(skip + 1), limit: limit) }
                }
                print("| \(sort) | \(name) | \(Self.format(first.p50)) | \(Self.format(first.p99)) | \(page) | \(Self.format(deep.p50)) | \(Self.format(deep.p99)) | \(Self.format(offset.p50)) |")
            }
        }
        for (name, filter) in filters + [("q=number 12", AlbumFilter(text: "number 12"))] {
            let timing = try Self.samples(filter.isEmpty ? rounds : 5) { _ = try store.read(.default) { try $0.count(matching: filter) } }
            print("count(matching: \(name)): p50 \(Self.format(timing.p50))")
        }
    }

    static func samples(_ rounds: Int, _ body: () throws -> Void) throws -> (p50: Duration, p99: Duration) {
        var samples: [Duration] = []
        for _ in 0..<rounds {
            let start = ContinuousClock.now
            try body()
            samples.append(ContinuousClock.now - start)
        }
        samples.sort()
        return (samples[samples.count / 2], samples[min(samples.count - 1, samples.count * 99 / 100)])
    }
}
