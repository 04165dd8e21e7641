import Foundation
import Library
import Testing

extension AlbumStoreContract {
    /// Random inserts, deletes, moves within and between libraries (in transactions of one or
    /// two libraries), emptyings, and deletions and re-creations of libraries, checked against
    /// arrays after every transaction: the order of each library, the catalog's counts, and
    /// where `library(of:)` finds each album. Small buckets in the SQLite factories make the
    /// two-library transactions split and merge buckets of both libraries.
    static func randomCatalog(_ factory: AlbumStoreFactory) throws {
        let store = try factory().albums
        let names = [LibraryID.default, jazz, blues]
        var model: [LibraryID: [Album]] = [.default: []]
        for library in names.dropFirst() {
            _ = try store.createLibrary(library, name: library.rawValue)
            model[library] = []
        }
        var random = SplitMix(seed: 2026)
        var next: UInt64 = 1
        var done = (moves: 0, deletions: 0, recreations: 0, emptyings: 0)
        for round in 0..<120 {
            let live = names.filter { model[$0] != nil }
            let roll = random.below(100)
            if roll < 4, let doomed = live.filter({ $0 != .default }).randomElement(using: &random) {
                try store.deleteLibrary(doomed)
                model[doomed] = nil
                done.deletions += 1
            } else if roll < 8, let absent = names.first(where: { model[$0] == nil }) {
                _ = try store.createLibrary(absent, name: absent.rawValue)
                model[absent] = []
                done.recreations += 1
            } else if roll < 40, live.count >= 2 {
                // A move between two libraries (or, one time in four, two moves in one transaction).
                var pair = live.shuffled(using: &random).prefix(2).map { $0 }
                if model[pair[0]]!.isEmpty { pair.reverse() }
                guard !model[pair[0]]!.isEmpty else { continue }
                let moves = random.below(4) == 0 ? 2 : 1
                try store.write(pair) { writers throws in
                    for _ in 0..<moves where !model[pair[0]]!.isEmpty {
                        let album = model[pair[0]]!.remove(at: random.below(model[pair[0]]!.count))
                        let target = random.below(model[pair[1]]!.count + 1)
                        try writers[0].delete(id: album.id)
                        try writers[1].insert(album, at: target)
                        model[pair[1]]!.insert(album, at: target)
                        done.moves += 1
                    }
                    _ = try writers[0].bumpVersion()
                    _ = try writers[1].bumpVersion()
                }
            } else if let library = live.randomElement(using: &random) {
                try store.write(library) { writer throws in
                    for _ in 0..<(1 + random.below(6)) {
                        var albums = model[library]!
                        switch random.below(10) {
                        case 0..<5:
                            let album = Self.album(next)
                            next += 1
                            let index = random.below(albums.count + 1)
                            try writer.insert(album, at: index)
                            albums.insert(album, at: index)
                        case 5..<7 where !albums.isEmpty:
                            let album = albums.remove(at: random.below(albums.count))
                            try writer.delete(id: album.id)
                        case 7..<9 where albums.count > 1:
                            let album = albums.remove(at: random.below(albums.count))
                            let index = random.below(albums.count + 1)
                            try writer.move(id: album.id, to: index)
                            albums.insert(album, at: index)
                        case 9 where round % 7 == 0:
                            try writer.deleteAllAlbums()
                            albums = []
                            done.emptyings += 1
                        default:
                            break
                        }
                        model[library] = albums
                    }
                }
            }
            try expectModel(store, model, round: round)
        }
        #expect(done.moves > 20 && done.deletions > 0 && done.recreations > 0 && done.emptyings > 0, "\(done)")
        #expect(model.values.map(\.count).reduce(0, +) > 20, "the libraries grew")
    }

    private static func expectModel(_ store: any AlbumStore, _ model: [LibraryID: [Album]], round: Int) throws {
        let ordered = model.keys.sorted()
        #expect(try store.libraries().map { [$0.id.rawValue, String($0.albumCount)] }
                == ordered.map { [$0.rawValue, String(model[$0]!.count)] }, "round \(round)")
        try store.read(ordered) { readers throws in
            for (library, reader) in zip(ordered, readers) {
                var albums: [Album] = []
                try reader.forEachAlbum { albums.append($0) }
                #expect(albums == model[library]!, "round \(round), library \(library)")
                for (index, album) in model[library]!.enumerated() where index % 3 == round % 3 {
                    #expect(try reader.index(of: album.id) == index, "round \(round)")
                    #expect(try readers[0].library(of: album.id) == library, "round \(round)")
                }
            }
        }
        for library in ordered {
            try expectOrder(store, in: library, model[library]!)
        }
    }

    /// SplitMix64: a small seeded generator, so a failing sequence repeats.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    }
}
