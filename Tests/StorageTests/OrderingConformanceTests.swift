import Essentials
import Foundation
import HTTPTestSupport
import Library
import Storage
import TestThreads
import Testing

/// Random sequences of inserts, deletes, moves and updates, run against the SQLite store and
/// a plain array, comparing everything the reader exposes after every step.
@Suite("Ordering conformance against an array model", .ownThreads)
struct OrderingConformanceTests {
    struct Scenario: Sendable, CustomTestStringConvertible {
        var name: String
        var seed: UInt64
        var steps: Int
        var bucketSize: Int
        var spacing: SQLiteAlbumStore.KeySpacing
        var testDescription: String { name }
    }

    static let scenarios: [Scenario] = [
        // Tiny buckets and tiny key gaps: splits, merges and both renumberings all the time.
        Scenario(
            name: "buckets of 4, key gaps of 4", seed: 1, steps: 2500, bucketSize: 4,
            spacing: .init(positionGap: 4, positionLimit: 1024, bucketGap: 4)),
        // Small buckets with the production key spacing.
        Scenario(name: "buckets of 8, default keys", seed: 2, steps: 2500, bucketSize: 8, spacing: .init()),
        // Odd bucket size, gaps of 2 (every insert between two keys renumbers).
        Scenario(
            name: "buckets of 5, key gaps of 2", seed: 3, steps: 1500, bucketSize: 5,
            spacing: .init(positionGap: 2, positionLimit: 64, bucketGap: 2)),
    ]

    @Test(arguments: scenarios)
    func randomOperationsMatchTheModel(_ scenario: Scenario) throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: scenario.bucketSize, spacing: scenario.spacing)
        var model: [Album] = []
        var random = SeededGenerator(seed: scenario.seed)
        var nextNumber: UInt64 = 1
        var hotIndex = 0

        func newAlbum() -> Album {
            defer { nextNumber += 1 }
            return Fixtures.album(nextNumber)
        }

        for step in 0..<scenario.steps {
            // Alternate growth and shrink phases so buckets both split and merge.
            let growing = (step / 300) % 2 == 0
            let roll = Int.random(in: 0..<100, using: &random)
            if step % 100 == 0 { hotIndex = Int.random(in: 0...model.count, using: &random) }
            var description = ""
            try store.write(.default) { writer throws in
                if model.isEmpty || roll < (growing ? 55 : 25) {
                    let album = newAlbum()
                    let index: Int
                    switch roll % 5 {
                    case 0: index = 0
                    case 1: index = model.count
                    case 2: index = min(hotIndex, model.count)
                    default: index = Int.random(in: 0...model.count, using: &random)
                    }
                    description = "insert \(album.id) at \(index)"
                    try writer.insert(album, at: index)
                    model.insert(album, at: index)
                } else if roll < (growing ? 60 : 30) {
                    // A batch of appends followed by reads in the same transaction (the
                    // lazily written tail must be visible to them).
                    let batch = Int.random(in: 1...12, using: &random)
                    description = "append \(batch)"
                    for _ in 0..<batch {
                        let album = newAlbum()
                        try writer.insert(album, at: try writer.count())
                        model.append(album)
                    }
                    #expect(try writer.album(at: model.count - 1) == model.last)
                    #expect(try writer.index(of: model.last!.id) == model.count - 1)
                    #expect(try writer.albums(offset: max(0, model.count - 3), limit: 10) == Array(model.suffix(3)))
                } else if roll < (growing ? 80 : 75) {
                    let index = roll % 4 == 0 ? 0 : Int.random(in: 0..<model.count, using: &random)
                    description = "delete \(model[index].id) at \(index)"
                    try writer.delete(id: model[index].id)
                    model.remove(at: index)
                } else if roll < 92 {
                    let from = Int.random(in: 0..<model.count, using: &random)
                    let to = roll % 3 == 0 ? 0 : Int.random(in: 0..<model.count, using: &random)
                    description = "move \(model[from].id) from \(from) to \(to)"
                    try writer.move(id: model[from].id, to: to)
                    let album = model.remove(at: from)
                    model.insert(album, at: to)
                } else {
                    let index = Int.random(in: 0..<model.count, using: &random)
                    var album = model[index]
                    album.title += " (remastered)"
                    album.year = album.year == nil ? 2001 : nil
                    album.coverUrl = album.coverUrl == nil ? "https://covers.example.com/new.png" : nil
                    album.updatedAt = Timestamp.date(milliseconds: Int64(step) * 13)
                    description = "update \(album.id)"
                    try writer.update(album)
                    model[index] = album
                }
            }
            try compare(store, model, step: step, description: description, random: &random)
        }
        let counters = store.orderingCounters
        #expect(counters.bucketSplits > 0)
        #expect(counters.bucketMerges > 0)
        if scenario.spacing.positionGap <= 4 {
            #expect(counters.bucketRenumbers > 0)
            #expect(counters.bucketRespaces > 0)
        }
        if scenario.spacing.bucketGap <= 4 {
            #expect(counters.orderRenumbers > 0)
        }
    }

    /// Compares every reader primitive with the model; full scans of index(of:) now and then.
    private func compare(
        _ store: SQLiteAlbumStore, _ model: [Album], step: Int, description: String,
        random: inout SeededGenerator
    ) throws {
        let context = Comment(rawValue: "after step \(step): \(description)")
        let report = try store.checkConsistency(.default)
        #expect(report.albumCount == model.count, context)
        let samples = (0..<8).map { _ in Int.random(in: -1...model.count, using: &random) }
        let offset = Int.random(in: 0...model.count + 1, using: &random)
        let limit = Int.random(in: 1...40, using: &random)
        let fullIndexCheck = step % 97 == 0
        let mismatch = try store.read(.default) { reader -> String? in
            if try reader.count() != model.count { return "count \(try reader.count()) != \(model.count)" }
            var stored: [Album] = []
            try reader.forEachAlbum { stored.append($0) }
            if stored != model { return "order differs" }
            for index in samples {
                let expected = model.indices.contains(index) ? model[index] : nil
                if try reader.album(at: index) != expected { return "album(at: \(index))" }
                if let expected, try reader.index(of: expected.id) != index { return "index(of: \(expected.id))" }
                if let expected, try reader.album(id: expected.id) != expected { return "album(id: \(expected.id))" }
            }
            let window = offset < model.count ? Array(model[offset..<min(model.count, offset + limit)]) : []
            if try reader.albums(offset: offset, limit: limit) != window { return "albums(offset: \(offset), limit: \(limit))" }
            if fullIndexCheck {
                for (index, album) in model.enumerated() where try reader.index(of: album.id) != index {
                    return "index(of: \(album.id)) in the full check"
                }
            }
            if try reader.index(of: Fixtures.id(999_999_999)) != nil { return "index of an unknown id" }
            return nil
        }
        #expect(mismatch == nil, context)
        if mismatch != nil {
            throw MarkerError(token: step) // stop at the first divergence
        }
    }

    @Test func repeatedInsertsIntoOneGapRewriteKeys() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 64)
        var model = [Fixtures.album(1), Fixtures.album(2)]
        try store.write(.default) { writer throws in
            for (index, album) in model.enumerated() { try writer.insert(album, at: index) }
        }
        // Each insert at index 1 halves the gap before the previous one: 2^32 runs out at 32.
        for number in 3...50 as ClosedRange<UInt64> {
            try store.write(.default) { try $0.insert(Fixtures.album(number), at: 1) }
            model.insert(Fixtures.album(number), at: 1)
        }
        let first = store.orderingCounters
        #expect(first.bucketRenumbers + first.bucketRespaces >= 1)
        #expect(try Fixtures.allAlbums(store) == model)
        // Many more albums around, then the same pile-up in the middle: windows suffice.
        try store.write(.default) { writer throws in
            for number in 100..<160 as Range<UInt64> {
                try writer.insert(Fixtures.album(number), at: try writer.count())
                model.append(Fixtures.album(number))
            }
        }
        let before = store.orderingCounters
        for number in 200..<300 as Range<UInt64> {
            try store.write(.default) { try $0.insert(Fixtures.album(number), at: 70) }
            model.insert(Fixtures.album(number), at: 70)
        }
        #expect(store.orderingCounters.bucketRespaces > before.bucketRespaces)
        #expect(try Fixtures.allAlbums(store) == model)
        _ = try store.checkConsistency(.default)
    }

    @Test func repeatedSplitsBetweenTwoBucketsRenumberTheBuckets() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 4)
        var model = (1...40 as ClosedRange<UInt64>).map { Fixtures.album($0) }
        try store.write(.default) { writer throws in
            for album in model { try writer.insert(album, at: try writer.count()) }
        }
        for number in 100..<400 as Range<UInt64> {
            try store.write(.default) { try $0.insert(Fixtures.album(number), at: 20) }
            model.insert(Fixtures.album(number), at: 20)
        }
        #expect(store.orderingCounters.orderRenumbers >= 1)
        #expect(try Fixtures.allAlbums(store) == model)
        let report = try store.checkConsistency(.default)
        #expect(report.largestBucket <= 8)
    }

    @Test func insertsAtTheFrontGrowNewBucketsInFront() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 4)
        var model: [Album] = []
        for number in 1...200 as ClosedRange<UInt64> {
            try store.write(.default) { try $0.insert(Fixtures.album(number), at: 0) }
            model.insert(Fixtures.album(number), at: 0)
        }
        #expect(try Fixtures.allAlbums(store) == model)
        let report = try store.checkConsistency(.default)
        #expect(report.bucketCount >= 200 / 8)
        #expect(report.largestBucket <= 8)
        // Deleting from the front empties and removes buckets.
        for album in model.prefix(150) {
            try store.write(.default) { try $0.delete(id: album.id) }
        }
        #expect(try Fixtures.allAlbums(store) == Array(model.dropFirst(150)))
        #expect(try store.checkConsistency(.default).albumCount == 50)
    }

    @Test func appendsFillBucketsToTheTargetSize() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 16)
        try store.write(.default) { writer throws in
            for number in 1...1000 as ClosedRange<UInt64> {
                try writer.insert(Fixtures.album(number), at: Int(number) - 1)
            }
        }
        let report = try store.checkConsistency(.default)
        #expect(report == SQLiteAlbumStore.OrderingReport(albumCount: 1000, bucketCount: 63, largestBucket: 16, smallestBucket: 8))
        #expect(store.orderingCounters.bucketSplits == 0)
        #expect(try store.read(.default) { try $0.album(at: 999)?.id } == Fixtures.id(1000))
    }
}
