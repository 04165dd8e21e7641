@testable import BlueLibraryAPI
import Foundation
import HTTPTestSupport
import Library
import Testing

/// Exact walks: cursor walks of libraries and views while albums are added, deleted and moved
/// (within and between libraries) between pages, checked against a brute-force reference.
struct WalkRules {
    let factory: AlbumStoreFactory
    let seal = PagingRules.seal()

    /// Round-trips a cursor through its wire form, as a client would.
    func wire(_ cursor: PageCursor, _ query: AlbumQuery) throws -> PageStart {
        .cursor(try PageCursor.decode(cursor.encoded(sealedWith: seal), for: query, seal: seal))
    }

    func aLibraryWalkShowsAnAlbumMovedAcrossTheCursorOnce() throws {
        let fixture = try FacadeFixture(factory)
        let albums = try fixture.add("A", "B", "C", "D", "E", "F")
        let first = try fixture.facade.page(PageRequest(limit: 3))
        #expect(first.items.map(\.album.title) == ["A", "B", "C"])
        // A (seen) moves ahead; F (not seen) moves behind; a new album lands behind, one ahead.
        _ = try fixture.facade.move(id: albums[0].id, to: 5)
        _ = try fixture.facade.move(id: albums[5].id, to: 0)
        _ = try fixture.facade.add(input("New behind"), at: 0)
        _ = try fixture.facade.add(input("New ahead"), at: 7)
        var start = try wire(try #require(first.next), AlbumQuery())
        var rest: [String] = []
        while true {
            let page = try fixture.facade.page(PageRequest(start: start, limit: 2))
            rest += page.items.map(\.album.title)
            guard let next = page.next else { break }
            start = try wire(next, AlbumQuery())
        }
        #expect(rest == ["F", "D", "E", "New ahead"], "F first (moved behind unseen), A skipped, the new album behind not shown")
    }

    func aWalkExpiresWhenItsChangesAreGoneOrTheLibraryWasReplaced() throws {
        let fixture = try ViewFixture(factory, retention: ChangeRetention(age: .zero, count: 0, prunePerWrite: 100))
        try fixture.create(ViewFixture.jazz)
        try fixture.fill(.default, 6, prefix: "D")
        let facade = fixture.libraries.defaultLibrary
        let first = try facade.page(PageRequest(limit: 2))
        fixture.clock.advance(milliseconds: 10)
        _ = try facade.add(input("X"))
        fixture.clock.advance(milliseconds: 10)
        _ = try facade.add(input("Y"))  // prunes X's change
        let expired = libraryError { _ = try facade.page(PageRequest(start: .cursor(try #require(first.next)), limit: 2)) }
        #expect(expired?.code == "walk-expired")

        let jazz = try fixture.libraries.facade(ViewFixture.jazz)
        let view = try fixture.libraries.createView(id: ViewID(rawValue: "both"), sources: [.default, ViewFixture.jazz])
        let page = try fixture.libraries.page(view: view.id, PageRequest(limit: 2))
        #expect(try jazz.seedIfEmpty())
        let replaced = libraryError { _ = try fixture.libraries.page(view: view.id, PageRequest(start: .cursor(try #require(page.next)), limit: 2)) }
        #expect(replaced?.code == "walk-expired")
    }

    /// The randomized walk: a view over three libraries (and a library outside it), walked
    /// with cursors in `query`'s order while albums are added, deleted and moved between pages.
    func randomWalk(seed: UInt64, query: AlbumQuery, viewFilter: AlbumFilter = .all) throws {
        var random = SeededGenerator(seed: seed)
        let fixture = try ViewFixture(factory)
        try fixture.create(ViewFixture.jazz, ViewFixture.blues, ViewFixture.outside)
        try fixture.fill(.default, 30, prefix: "D")
        try fixture.fill(ViewFixture.blues, 25, prefix: "B")
        try fixture.fill(ViewFixture.outside, 10, prefix: "O")
        let view = try fixture.libraries.createView(
            id: ViewID(rawValue: "all"), sources: [.default, ViewFixture.jazz, ViewFixture.blues], filter: viewFilter)
        let all: [LibraryID] = [.default, ViewFixture.jazz, ViewFixture.blues, ViewFixture.outside]
        let filter = CombinedFilterReference(request: query.filter, view: viewFilter)

        let atStart = Set(try fixture.contents(of: view).map(\.album.id))
        var leftTheView: Set<AlbumID> = []
        var seen: [AlbumID: Int] = [:]
        var start = PageStart.first
        var round = 0
        while true {
            let reference = try fixture.contents(of: view)
            let page = try fixture.libraries.page(view: view.id, PageRequest(query: query, start: start, limit: Int.random(in: 1...7, using: &random)))
            for item in page.items {
                seen[item.album.id, default: 0] += 1
                let place = try #require(reference.firstIndex { $0.album.id == item.album.id }, "a listed album is in the view")
                #expect(item.library == reference[place].library, "the item's library")
                #expect(filter.matches(item.album), "the item passes both filters")
                if query.showsIndexes && viewFilter.isEmpty {
                    #expect(item.index == place, "the item's view index")
                } else {
                    #expect(item.index == nil)
                }
            }
            guard let next = page.next else { break }
            start = try wire(next, query)
            round += 1
            #expect(round < 200, "the walk ends")
            if round >= 200 { break }
            // Between pages: a few changes anywhere (undo included). An album in the view before
            // a change and not after it has left the view (deleted, moved outside, add undone).
            for _ in 0..<Int.random(in: 0...4, using: &random) {
                let before = Set(try fixture.contents(of: view).map(\.album.id))
                let library = all.randomElement(using: &random)!
                let facade = try fixture.libraries.facade(library)
                let albums = try fixture.contents(library)
                switch Int.random(in: 0..<11, using: &random) {
                case 0...1:
                    let year = Int.random(in: 1960...2000, using: &random)
                    _ = try facade.add(AlbumInput(title: "New \(round)", artist: "Ann", genre: "Rock", year: year),
                                       at: Int.random(in: 0...albums.count, using: &random))
                case 2:
                    guard let victim = albums.randomElement(using: &random) else { continue }
                    _ = try facade.delete(id: victim.id)
                case 3...5:
                    guard let album = albums.randomElement(using: &random) else { continue }
                    _ = try facade.move(id: album.id, to: Int.random(in: 0..<albums.count, using: &random))
                case 6:
                    // Undo whatever is newest there (a move back between libraries included).
                    // (A command that no longer fits, e.g. its album was moved on, is dropped.)
                    let failure = libraryError { if try facade.undoStatus().depth > 0 { _ = try facade.undo() } }
                    if let failure, failure.code != "undo-conflict" { throw failure }
                default:
                    guard let album = albums.randomElement(using: &random) else { continue }
                    let target = all.filter { $0 != library }.randomElement(using: &random)!
                    let count = try fixture.contents(target).count
                    _ = try fixture.libraries.move(album.id, from: library, to: target, index: Int.random(in: 0...count, using: &random))
                }
                leftTheView.formUnion(before.subtracting(try fixture.contents(of: view).map(\.album.id)))
            }
        }
        let throughout = atStart.subtracting(leftTheView)
        let finalAlbums = Dictionary(try fixture.contents(of: view).map { ($0.album.id, $0.album) }, uniquingKeysWith: { a, _ in a })
        for id in throughout {
            let album = try #require(finalAlbums[id])
            #expect(seen[id] == (filter.matches(album) ? 1 : nil), "seed \(seed) \(query.sort): \(album.title) present throughout")
        }
        for (id, times) in seen where !leftTheView.contains(id) {
            #expect(times == 1, "seed \(seed): an album that never left the view is shown at most once")
        }
    }

    /// Value sorts over a view: every sort, both directions, with view and request filters
    /// (including one the store cannot apply whole), against the merged reference.
    func valueSortsOfAViewMatchTheReference() throws {
        let fixture = try ViewFixture(factory)
        try fixture.create(ViewFixture.jazz, ViewFixture.blues)
        try fixture.fill(.default, 23, prefix: "Delta")
        try fixture.fill(ViewFixture.jazz, 17, prefix: "alpha")
        try fixture.fill(ViewFixture.blues, 20, prefix: "Bravo")
        let views: [(AlbumFilter, [AlbumFilter])] = [
            (.all, [.all, AlbumFilter(text: "a 1"), AlbumFilter(genre: "rock", yearFrom: 1970)]),
            (AlbumFilter(artist: "ann"), [.all, AlbumFilter(artist: "BOB"), AlbumFilter(yearTo: 1980)]),
            (AlbumFilter(text: "1", yearFrom: 1965, yearTo: 1990), [AlbumFilter(text: "2"), AlbumFilter(yearFrom: 1991)]),
        ]
        for (number, (viewFilter, requests)) in views.enumerated() {
            let view = try fixture.libraries.createView(
                id: ViewID(rawValue: "v\(number)"), sources: [ViewFixture.blues, .default, ViewFixture.jazz], filter: viewFilter)
            let reference = try fixture.contents(of: view)
            for field in AlbumSort.Field.allCases {
                for descending in [false, true] {
                    for requestFilter in requests {
                        let query = AlbumQuery(sort: AlbumSort(field, descending: descending), filter: requestFilter)
                        let filter = CombinedFilterReference(request: requestFilter, view: viewFilter)
                        var expected = reference.filter { filter.matches($0.album) }
                        if field == .position {
                            if descending { expected.reverse() }
                        } else {
                            expected.sort { query.sort.orders($0.album, before: $1.album) }
                        }
                        var got: [ListedAlbum] = []
                        var start = PageStart.first
                        while true {
                            let page = try fixture.libraries.page(view: view.id, PageRequest(query: query, start: start, limit: 4))
                            got += page.items
                            guard let next = page.next else { break }
                            start = try wire(next, query)
                        }
                        #expect(got.map(\.album.id) == expected.map(\.album.id), "\(viewFilter) \(query.sort) \(requestFilter)")
                        #expect(got.map(\.library) == expected.map(\.library))
                        let counted = try fixture.libraries.page(view: view.id, PageRequest(query: query, limit: 1, includeTotal: true))
                        #expect(counted.total == expected.count)
                        let offset = try fixture.libraries.page(view: view.id, PageRequest(query: query, start: .offset(3), limit: 5))
                        #expect(offset.items.map(\.album.id) == Array(expected.dropFirst(3).prefix(5)).map(\.album.id), "offset")
                        let far = try fixture.libraries.page(view: view.id, PageRequest(query: query, start: .offset(Int.max), limit: 5))
                        #expect(far.items.isEmpty && far.next == nil, "an offset past the end, however large")
                    }
                }
            }
        }
    }
}

/// The reference of a view filter AND a request filter.
struct CombinedFilterReference {
    let request: AlbumFilter
    let view: AlbumFilter

    func matches(_ album: Album) -> Bool { request.matches(album) && view.matches(album) }
}

extension FacadeRules {
    static let walkRules: [ContractCheck] = [
        ContractCheck("aLibraryWalkShowsAnAlbumMovedAcrossTheCursorOnce") { try WalkRules(factory: $0).aLibraryWalkShowsAnAlbumMovedAcrossTheCursorOnce() },
        ContractCheck("aWalkExpiresWhenItsChangesAreGoneOrTheLibraryWasReplaced") {
            try WalkRules(factory: $0).aWalkExpiresWhenItsChangesAreGoneOrTheLibraryWasReplaced()
        },
        ContractCheck("randomWalksOfAThreeLibraryViewSeeEveryAlbumOnce") { factory in
            let rules = WalkRules(factory: factory)
            for seed: UInt64 in 1...6 {
                try rules.randomWalk(seed: seed, query: AlbumQuery())
            }
            try rules.randomWalk(seed: 7, query: AlbumQuery(sort: AlbumSort(.position, descending: true)))
            try rules.randomWalk(seed: 8, query: AlbumQuery(filter: AlbumFilter(yearFrom: 1970)), viewFilter: AlbumFilter(genre: "rock"))
            try rules.randomWalk(seed: 9, query: AlbumQuery(sort: AlbumSort(.position, descending: true), filter: AlbumFilter(text: "1")),
                                 viewFilter: AlbumFilter(text: "e"))
            // Value sorts are keyset walks: exact under adds, deletes and moves too.
            try rules.randomWalk(seed: 10, query: AlbumQuery(sort: AlbumSort(.title)))
            try rules.randomWalk(seed: 11, query: AlbumQuery(sort: AlbumSort(.year, descending: true), filter: AlbumFilter(artist: "ann")),
                                 viewFilter: AlbumFilter(yearTo: 1995))
        },
        ContractCheck("valueSortsOfAViewMatchTheReference") { try WalkRules(factory: $0).valueSortsOfAViewMatchTheReference() },
    ]
}
