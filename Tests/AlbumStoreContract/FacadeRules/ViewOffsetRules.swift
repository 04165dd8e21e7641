import Essentials
import Foundation
import HTTPTestSupport
import Library
import Testing

/// Offset pages of a view's value sorts: the same pages (items, order, cursor, total) as the
/// straightforward reference (every album of the view, filtered, sorted, the offset dropped),
/// at every offset and past the end, and read without merging what they skip.
struct ViewOffsetRules {
    let factory: AlbumStoreFactory

    /// Sort values chosen to collide: the same value in several sources, case-only and
    /// accent-only differences (one key each), non-ASCII text, leading articles, missing years,
    /// equal creation times.
    static let titles = ["alpha", "Alpha", "ALPHA", "beta", "Émile", "émile", "Zoë", "zoe", "ZOE", "日本", "Ärger", "ärger", "100%", "_x", "b"]
    static let artists = ["Ann", "ann", "Bob", "Ødegaard", "cy", "The Bob", "A Cy"]

    /// Libraries `s0`..`s<n-1>` of random albums (ids random and unique, so ties between equal
    /// values break in no particular source order), written straight to the store.
    func fill(_ stores: StoreUnderTest, sources: Int, sizes: ClosedRange<Int>, seed: UInt64) throws -> [LibraryID] {
        var random = SeededGenerator(seed: seed)
        var used: Set<UInt64> = []
        var ids: [LibraryID] = []
        for source in 0..<sources {
            let library = LibraryID(rawValue: "s\(source)")
            _ = try stores.albums.createLibrary(library, name: "Source \(source)")
            ids.append(library)
            var albums: [Album] = []
            for _ in 0..<Int.random(in: sizes, using: &random) {
                var number = UInt64.random(in: 1...1_000_000, using: &random)
                while !used.insert(number).inserted { number = UInt64.random(in: 1...1_000_000, using: &random) }
                let created = Timestamp.date(milliseconds: 1_700_000_000_000 + Int64.random(in: 0...6, using: &random) * 1000)
                albums.append(Album(
                    id: AlbumStoreContract.id(number), title: Self.titles.randomElement(using: &random)!,
                    artist: Self.artists.randomElement(using: &random)!, genre: ["Pop", "Rock", "Jazz"].randomElement(using: &random)!,
                    year: Bool.random(using: &random) ? nil : [1960, 1971, 1971, 1985].randomElement(using: &random)!,
                    coverUrl: nil, createdAt: created, updatedAt: created))
            }
            try stores.albums.write(library) { writer in
                for (index, album) in albums.enumerated() { try writer.insert(album, at: index) }
            }
        }
        return ids
    }

    /// The reference page: the view's albums that pass both filters, in sort order, from `offset`.
    static func expectedPage(
        _ reference: [(album: Album, library: LibraryID)], _ query: AlbumQuery, viewFilter: AlbumFilter, offset: Int, limit: Int,
        view: ViewDefinition
    ) -> (items: [(album: Album, library: LibraryID)], next: PageCursor?) {
        let filter = CombinedFilterReference(request: query.filter, view: viewFilter)
        let ordered = reference.filter { filter.matches($0.album) }.sorted { query.sort.orders($0.album, before: $1.album) }
        let items = offset >= ordered.count ? [] : Array(ordered[offset..<min(ordered.count, offset + limit)])
        guard offset < ordered.count, offset + limit < ordered.count, let last = items.last else { return (items, nil) }
        return (items, PageCursor(
            fingerprint: query.fingerprint, scope: PageCursor.scope(view: view.id), revision: view.revision,
            lastValue: SortValue.of(last.album, for: query.sort.field, articles: .standard, search: query.sort.search),
            lastID: last.album.id,
            lastArticles: query.sort.field == .artist ? .standard : nil))
    }

    func offsetsMatchTheReference() throws {
        let stores = try factory()
        let sources = try fill(stores, sources: 4, sizes: 0...24, seed: 28)
        let clock = ManualDateClock()
        let libraries = Libraries(store: stores.albums, clock: { clock.now }, ids: .random(clock: { clock.now }))
        var reference: [(album: Album, library: LibraryID)] = []
        for source in sources {
            let albums = try stores.albums.read(source) { reader in
                var albums: [Album] = []
                try reader.forEachAlbum { albums.append($0) }
                return albums
            }
            reference += albums.map { (album: $0, library: source) }
        }
        // One source empty or not, three filters the store applies whole, and a view whose
        // filter and the request's name one field twice (a remainder, applied in memory).
        let cases: [(view: AlbumFilter, requests: [AlbumFilter], everyOffset: Bool)] = [
            (.all, [.all], true),
            (.all, [AlbumFilter(genre: "rock")], true),
            (AlbumFilter(yearFrom: 1965), [AlbumFilter(text: "a"), AlbumFilter(artist: "ANN")], false),
            (AlbumFilter(artist: "ann"), [AlbumFilter(artist: "bob"), .all], false),
        ]
        for (number, (viewFilter, requests, everyOffset)) in cases.enumerated() {
            let view = try libraries.createView(
                id: ViewID(rawValue: "offsets\(number)"), sources: [sources[2], sources[0], sources[3], sources[1]], filter: viewFilter)
            for field in AlbumSort.Field.allCases where field != .position {
                for descending in [false, true] {
                    for requestFilter in requests {
                        let query = AlbumQuery(sort: AlbumSort(field, descending: descending), filter: requestFilter)
                        let combined = CombinedFilterReference(request: requestFilter, view: viewFilter)
                        let matching = reference.filter { combined.matches($0.album) }.count
                        let sampled: [Int] = [0, 1, 2, matching / 3, matching / 2, matching - 2, matching - 1, matching, matching + 1]
                        let offsets: [Int] = everyOffset ? Array(0...(matching + 2)) : sampled.filter { $0 >= 0 }
                        for offset in offsets + [1_000_000, 2_000_000_000, Int.max] {
                            let limit = [1, 2, 5, 50][offset % 4]
                            let context = "view \(viewFilter) \(query.sort) \(requestFilter) offset \(offset) limit \(limit)"
                            let expected = Self.expectedPage(reference, query, viewFilter: viewFilter, offset: offset, limit: limit, view: view)
                            let page = try libraries.page(
                                view: view.id, PageRequest(query: query, start: .offset(offset), limit: limit, includeTotal: offset % 3 == 0))
                            #expect(page.items.map(\.album) == expected.items.map(\.album), "\(context)")
                            #expect(page.items.map(\.library) == expected.items.map(\.library), "\(context)")
                            #expect(page.items.allSatisfy { $0.index == nil }, "\(context)")
                            #expect(page.next == expected.next, "\(context): the cursor a walk to here gives")
                            if offset % 3 == 0 { #expect(page.total == matching, "\(context)") }
                        }
                    }
                }
            }
        }
    }

    /// A deep offset reads the pivots and the page, never the albums it skips: a counter on the
    /// store's rows (the old merge read offset + limit + 1 rows, and held them all).
    func deepOffsetsReadOnlyWhatThePageShows() throws {
        let stores = try factory()
        let counting = CountingAlbumStore(stores.albums)
        let sources = try fill(stores, sources: 4, sizes: 150...150, seed: 5)
        let clock = ManualDateClock()
        let libraries = Libraries(store: counting, clock: { clock.now }, ids: .random(clock: { clock.now }))
        let view = try libraries.createView(id: ViewID(rawValue: "deep"), sources: sources)
        let total = 600
        // The documented bound: at most log4/3(N) + 1 rounds of one row per source, then the
        // page (limit + 1 rows merged, read in batches of at least 4 per source).
        let rounds = Int((log(Double(total)) / log(4.0 / 3.0)).rounded(.up)) + 1
        for field in [AlbumSort.Field.title, .artist, .year, .createdAt] {
            for descending in [false, true] {
                let query = AlbumQuery(sort: AlbumSort(field, descending: descending))
                for (offset, limit) in [(500, 5), (total - 1, 10), (299, 50)] {
                    counting.rows.reset()
                    let page = try libraries.page(view: view.id, PageRequest(query: query, start: .offset(offset), limit: limit))
                    #expect(page.items.count == min(limit, total - offset))
                    let bound = sources.count * (rounds + 1) + (limit + 1) + sources.count * 2 * max(4, (limit + 1) / sources.count + 2)
                    #expect(counting.rows.total <= bound, "\(query.sort) offset \(offset): \(counting.rows.total) rows read")
                    #expect(counting.rows.total < offset, "\(query.sort) offset \(offset): fewer rows than it skips")
                    #expect(counting.rows.largest <= max(4, (limit + 1) / sources.count + 2), "\(query.sort) offset \(offset): one batch at a time")
                }
                for offset in [total, total + 1, 2_000_000_000, Int.max] {
                    counting.rows.reset()
                    let page = try libraries.page(view: view.id, PageRequest(query: query, start: .offset(offset), limit: 10))
                    #expect(page.items.isEmpty && page.next == nil)
                    #expect(counting.rows.total == 0, "past the end: counts only, no row read")
                }
            }
        }
    }
}

extension FacadeRules {
    static let viewOffsetRules: [ContractCheck] = [
        ContractCheck("offsetsOfAViewValueSortMatchTheReference") { try ViewOffsetRules(factory: $0).offsetsMatchTheReference() },
        ContractCheck("deepOffsetsOfAViewReadOnlyWhatThePageShows") { try ViewOffsetRules(factory: $0).deepOffsetsReadOnlyWhatThePageShows() },
    ]
}
