@testable import BlueLibraryAPI
import Foundation
import HTTPTestSupport
import Library
import Storage
import Synchronization
import TestThreads
import Testing

/// A cursor walk of a view over three SQLite libraries while another thread adds, deletes and
/// moves albums within and between them (through `Libraries`, as the server does): every album
/// present in the view throughout is seen exactly once.
@Suite(.ownThreads) struct ViewWalkTests {
    final class Shared: Sendable {
        let left = Mutex<Set<AlbumID>>([])
        let stop = Atomic<Bool>(false)
        let writes = Atomic<Int>(0)
    }

    @Test(arguments: [AlbumSort.position, AlbumSort(.position, descending: true), AlbumSort(.artist)])
    func walkingAViewWhileAnotherThreadMovesAlbums(_ sort: AlbumSort) throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 8)
        let libraries = Libraries(store: store, clock: { Date() }, ids: .random(clock: { Date() }))
        let sources = [LibraryID.default, LibraryID(rawValue: "jazz"), LibraryID(rawValue: "blues")]
        let outside = LibraryID(rawValue: "outside")
        for id in sources.dropFirst() + [outside] { _ = try libraries.create(id: id) }
        var random = SeededGenerator(seed: 41)
        for (number, library) in (sources + [outside]).enumerated() {
            let facade = try libraries.facade(library)
            for n in 0..<(number == 1 ? 50 : 300) {
                _ = try facade.add(try AlbumInput(title: "\(library) \(n)", artist: "Artist \(Int.random(in: 0..<40, using: &random))"))
            }
        }
        let view = try libraries.createView(id: ViewID(rawValue: "three"), sources: sources)
        let initial = Set(try sources.flatMap { source in
            try store.read(source) { reader in
                var ids: [AlbumID] = []
                try reader.forEachAlbum { ids.append($0.id) }
                return ids
            }
        })
        let shared = Shared()
        let writer = Thread {
            var random = SeededGenerator(seed: 42)
            let all = sources + [outside]
            // At most 60 moves: each can leave one album on the wrong side of the walk, and a
            // walk expires past 64 of them (by design); the cap keeps this test inside it.
            var moves = 0
            while !shared.stop.load(ordering: .relaxed), moves < 60 {
                do {
                    let library = all.randomElement(using: &random)!
                    let facade = try libraries.facade(library)
                    let count = try facade.count()
                    switch Int.random(in: 0..<6, using: &random) {
                    case 0:
                        _ = try facade.add(try AlbumInput(title: "new", artist: "Artist 1"), at: Int.random(in: 0...count, using: &random))
                    case 1 where count > 0:
                        let album = try facade.delete(at: Int.random(in: 0..<count, using: &random))
                        shared.left.withLock { _ = $0.insert(album.album.id) }
                    case 2...3 where count > 0:
                        moves += 1
                        let album = try facade.album(at: Int.random(in: 0..<count, using: &random))
                        _ = try facade.move(id: album.album.id, to: Int.random(in: 0..<count, using: &random))
                    default:
                        guard count > 0 else { continue }
                        moves += 1
                        let album = try facade.album(at: Int.random(in: 0..<count, using: &random))
                        let target = all.filter { $0 != library }.randomElement(using: &random)!
                        // Marked first: the walk may read the view right after the commit.
                        if target == outside { shared.left.withLock { _ = $0.insert(album.album.id) } }
                        _ = try libraries.move(album.album.id, from: library, to: target, index: 0)
                    }
                    shared.writes.add(1, ordering: .relaxed)
                } catch {
                    Issue.record("writer: \(error)")
                    return
                }
            }
        }
        writer.start()
        defer { shared.stop.store(true, ordering: .relaxed) }
        var seen: [AlbumID: Int] = [:]
        var request = PageRequest(query: AlbumQuery(sort: sort), limit: 7)
        var pages = 0
        while true {
            let page = try libraries.page(view: view.id, request)
            pages += 1
            for item in page.items { seen[item.album.id, default: 0] += 1 }
            guard let next = page.next else { break }
            request.start = .cursor(next)
            // Every few pages, until the writer is done, let it commit at least once more, so
            // the walk always runs while albums change (the writer is not paced otherwise).
            if pages % 3 == 0 {
                let before = shared.writes.load(ordering: .relaxed)
                #expect(eventually { shared.writes.load(ordering: .relaxed) > before || writer.isFinished })
            }
        }
        shared.stop.store(true, ordering: .relaxed)
        #expect(eventually { writer.isFinished }, "the writer stops")
        #expect(shared.writes.load(ordering: .relaxed) > 20, "the writer ran while walking")
        #expect(pages > 20)
        let left = shared.left.withLock { $0 }
        for id in initial.subtracting(left) {
            #expect(seen[id] == 1, "\(id) seen \(seen[id] ?? 0) times (sort \(sort))")
        }
    }
}
