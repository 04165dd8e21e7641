import BlueLibraryAPI
import Essentials
import Foundation
import HTTPTestSupport
import Library
import Storage
import Synchronization
import TestThreads
import Testing

/// `albums(matching:sort:from:limit:)` and `count(matching:)` of the SQLite store against a
/// brute-force reference written here (filter with `AlbumFilter.matches`; sort by the rules of
/// the reader protocol, spelled out independently in `Reference`).
@Suite("Filtered and sorted pages", .ownThreads)
struct PagingTests {
    /// Every sort but relevance (`relevanceEqualsTheReferenceOnEveryPath`: it needs a search).
    static let sorts: [AlbumSort] = AlbumSort.Field.allCases.filter { $0 != .relevance }.flatMap {
        [AlbumSort($0), AlbumSort($0, descending: true)]
    }

    /// The index each value sort's pages seek (`SchemaHistory.sortIndexes`).
    static let sortIndex: [AlbumSort.Field: String] = [
        .title: "albums_by_title_sort", .artist: "albums_by_artist_sort", .genre: "albums_by_genre_sort",
        .year: "albums_by_year", .createdAt: "albums_by_created",
    ]

    static let filters: [(String, AlbumFilter)] = [
        ("none", .all),
        ("q=an (a word and the start of others)", AlbumFilter(text: "an")),
        ("q=CAFÉ (folded)", AlbumFilter(text: "CAFÉ")),
        ("q=angel ca (two words, the last a prefix)", AlbumFilter(text: "angel ca")),
        ("q=% (no word: nothing)", AlbumFilter(text: "%")),
        ("q=_o (punctuation separates)", AlbumFilter(text: "_o")),
        ("q=\\ (no word: nothing)", AlbumFilter(text: "\\")),
        ("artist=the beatles", AlbumFilter(artist: "the beatles")),
        ("genre=ROCK", AlbumFilter(genre: "ROCK")),
        ("yearFrom=1990", AlbumFilter(yearFrom: 1990)),
        ("1970...1980", AlbumFilter(yearFrom: 1970, yearTo: 1980)),
        ("q=o, genre=jazz, yearTo=2000", AlbumFilter(text: "o", genre: "jazz", yearTo: 2000)),
        ("artist=NIRVANA, yearFrom=1960", AlbumFilter(artist: "NIRVANA", yearFrom: 1960)),
        ("matches nothing", AlbumFilter(text: "zzzz-nothing")),
        ("q=\"the beatles\" (a phrase)", AlbumFilter(text: #""the beatles""#)),
        ("q=\"blue angel\" an (a phrase, then a prefix)", AlbumFilter(text: #""blue angel" an"#)),
    ]

    /// One store shared by the read-only tests: a few thousand albums inserted at random
    /// places (so list order, id order and value orders all differ), in small buckets.
    static let fixture: Fixture = {
        do { return try Fixture(albumCount: 3000, seed: 77) } catch { fatalError("fixture: \(error)") }
    }()

    final class Fixture: @unchecked Sendable {
        let directory: TemporaryDirectory
        let store: SQLiteAlbumStore
        let library: [Album]
        /// Stores on the same file whose searches always walk the order / walk it filtered by
        /// the search index's matches / start from the index (`SearchIndex`), so every path
        /// meets the reference.
        let walking: SQLiteAlbumStore
        let filtered: SQLiteAlbumStore
        let indexed: SQLiteAlbumStore
        var searchPaths: [(String, SQLiteAlbumStore)] { [("walk", walking), ("filter", filtered), ("index", indexed)] }
        /// Limits low enough that a relevance page reads rank by rank, each rank's albums by
        /// whichever path their number chooses.
        let mixed: SQLiteAlbumStore

        init(albumCount: Int, seed: UInt64) throws {
            directory = try TemporaryDirectory()
            store = try Fixtures.store(directory, bucketSize: 16)
            _ = try store.createLibrary(LibraryID(rawValue: "never-written"), name: "Never written")
            var random = SeededGenerator(seed: seed)
            var model: [Album] = []
            let albums = (0..<albumCount).map { _ in Generated.album(using: &random) }
            for chunk in stride(from: 0, to: albums.count, by: 500) {
                try store.write(.default) { writer in
                    for album in albums[chunk..<min(albums.count, chunk + 500)] {
                        let index = Int.random(in: 0...model.count, using: &random)
                        try writer.insert(album, at: index)
                        model.insert(album, at: index)
                    }
                }
            }
            library = model
            #expect(try Fixtures.allAlbums(store) == model)
            walking = try Fixtures.store(directory, bucketSize: 16, searchIndexLimits: (0, 0))
            filtered = try Fixtures.store(directory, bucketSize: 16, searchIndexLimits: (0, .max))
            indexed = try Fixtures.store(directory, bucketSize: 16, searchIndexLimits: (.max, .max))
            mixed = try Fixtures.store(directory, bucketSize: 16, searchIndexLimits: (20, 300))
        }
    }

    // MARK: - Keyset walks, offsets, counts

    @Test(arguments: sorts)
    func keysetWalksEqualTheReference(_ sort: AlbumSort) throws {
        let fixture = Self.fixture
        for (path, store) in fixture.searchPaths {
            for (name, filter) in Self.filters {
                let expected = Reference.order(fixture.library, filter, sort)
                for limit in [1, 37, 500] where limit > 1 || expected.count <= 400 {
                    let walked = try Self.walk(store, filter, sort, limit: limit)
                    #expect(walked.map(\.id) == expected.map(\.id), "sort \(sort), filter \(name), limit \(limit), \(path)")
                }
            }
        }
    }

    @Test(arguments: sorts)
    func offsetPagesEqualReferenceSlices(_ sort: AlbumSort) throws {
        let fixture = Self.fixture
        var random = SeededGenerator(seed: 5)
        for (path, store) in fixture.searchPaths {
            for (name, filter) in Self.filters {
                let expected = Reference.order(fixture.library, filter, sort)
                let offsets = [0, 1, 36, expected.count / 2, max(0, expected.count - 1), expected.count, expected.count + 10]
                    + (0..<4).map { _ in Int.random(in: 0...expected.count, using: &random) }
                for offset in offsets {
                    let limit = Int.random(in: 1...60, using: &random)
                    let page = try store.read(.default) {
                        try $0.albums(matching: filter, sort: sort, from: .offset(offset), limit: limit)
                    }
                    let slice = Array(expected.dropFirst(offset).prefix(limit))
                    #expect(page?.map(\.id) == slice.map(\.id), "sort \(sort), filter \(name), offset \(offset), limit \(limit), \(path)")
                }
                let first = try store.read(.default) { try $0.albums(matching: filter, sort: sort, from: .start, limit: 25) }
                #expect(first?.map(\.id) == Array(expected.prefix(25)).map(\.id), "sort \(sort), filter \(name), start, \(path)")
            }
        }
    }

    /// Relevance (`SearchQuery.rank`, then id) on every path: a few matches sorted from the
    /// index, and many read rank by rank (through the index's matches, the whole-word ones, or
    /// a walk), keyset walks and offsets alike, both directions.
    @Test(arguments: ["angel", "an", "ang", "blue angel", "the", "be", "rock", "\"blue angel\"", "café b", "a", "angel rock",
                      "beatles a", "zq", "nightingale", "angel nightinga", "electronic", "electron", "night electronica",
                      "classical", "blue nirvana", "\"angel night\" electro"])
    func relevanceEqualsTheReferenceOnEveryPath(_ q: String) throws {
        let fixture = Self.fixture
        let filter = AlbumFilter(text: q)
        for descending in [false, true] {
            let sort = AlbumQuery(sort: AlbumSort(.relevance, descending: descending), filter: filter).sort
            let expected = Reference.order(fixture.library, filter, sort)
            for (path, store) in fixture.searchPaths + [("mixed", fixture.mixed)] {
                // Small pages where they stay few (they cross every rank boundary), else large ones.
                for limit in [7, 500] where limit > 7 || expected.count <= 150 {
                    let walked = try Self.walk(store, filter, sort, limit: limit)
                    #expect(walked.map(\.id) == expected.map(\.id), "q=\(q) \(sort), limit \(limit), \(path)")
                }
                for offset in [0, 5, expected.count / 2, expected.count] {
                    let page = try store.read(.default) { try $0.albums(matching: filter, sort: sort, from: .offset(offset), limit: 9) }
                    #expect(page?.map(\.id) == Array(expected.dropFirst(offset).prefix(9)).map(\.id), "q=\(q) \(sort) offset \(offset), \(path)")
                }
            }
        }
    }

    @Test func countsEqualTheReference() throws {
        let fixture = Self.fixture
        for (path, store) in fixture.searchPaths {
            for (name, filter) in Self.filters {
                let count = try store.read(.default) { try $0.count(matching: filter) }
                #expect(count == fixture.library.filter(filter.matches).count, "filter \(name), \(path)")
            }
        }
        // The fixture really exercises the tricky cases.
        let reference = fixture.library
        #expect(reference.filter(AlbumFilter(text: "%").matches).isEmpty, "no word to search for")
        #expect(reference.filter(AlbumFilter(text: "CAFÉ").matches).count > 0)
        #expect(reference.filter(AlbumFilter(text: "café").matches).count == reference.filter(AlbumFilter(text: "CAFE").matches).count,
                "case and accents fold")
        #expect(reference.filter(AlbumFilter(text: "angel ca").matches).count > 0)
        #expect(Set(reference.map { $0.title.lowercased() }).count < reference.count, "titles tie")
        #expect(reference.contains { $0.year == nil })
    }

    @Test(arguments: sorts)
    func afterAnAlbumThatIsGoneIsNil(_ sort: AlbumSort) throws {
        let fixture = Self.fixture
        let missing = Fixtures.id(123_456_789)
        #expect(!fixture.library.contains { $0.id == missing })
        for (_, filter) in Self.filters.prefix(3) {
            let page = try fixture.store.read(.default) {
                try $0.albums(matching: filter, sort: sort, from: .afterAlbum(missing), limit: 10)
            }
            #expect(page == nil, "sort \(sort)")
        }
        // In a library that was never written, too.
        let other = try fixture.store.read(LibraryID(rawValue: "never-written")) {
            try $0.albums(matching: .all, sort: sort, from: .afterAlbum(missing), limit: 10)
        }
        #expect(other == nil)
    }

    /// `.afterAlbum` in the position order continues after the album's current place, in
    /// both directions (what the facade's cursors rely on).
    @Test func afterAlbumInPositionOrderStartsRightAfterIt() throws {
        let fixture = Self.fixture
        var random = SeededGenerator(seed: 9)
        for _ in 0..<50 {
            let index = Int.random(in: 0..<fixture.library.count, using: &random)
            let anchor = fixture.library[index].id
            for descending in [false, true] {
                let page = try fixture.store.read(.default) {
                    try $0.albums(matching: .all, sort: AlbumSort(.position, descending: descending), from: .afterAlbum(anchor), limit: 40)
                }
                let expected = descending
                    ? Array(fixture.library[..<index].reversed().prefix(40)) : Array(fixture.library[(index + 1)...].prefix(40))
                #expect(page?.map(\.id) == expected.map(\.id))
            }
        }
    }

    /// Creation times whose `Date` does not floor back to its millisecond (about 7% of the
    /// millisecond values outside ~2020–2027, e.g. 384094687955 in 1982: Double rounding puts
    /// the `Date` a hair below). `Timestamp.milliseconds` once floored these, so a createdAt
    /// cursor made from such an album was 1 ms early: ascending, the album came back on the
    /// next page; descending, its ties with smaller ids were skipped. It now rounds within
    /// 0.1 ms, like the store, and cursors page exactly.
    @Test func createdAtCursorsOfDatesThatDoNotFloorBack() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 4)
        let awkward: [Int64] = [384_094_687_955, 380_701_698_991, -205_315_288_664]
        var random = SeededGenerator(seed: 3)
        var albums: [Album] = []
        for number in 0..<30 {
            var album = Generated.album(using: &random)
            let millis = awkward[number % awkward.count]
            album.createdAt = Timestamp.date(milliseconds: millis)
            albums.append(album)
        }
        // Regression: the domain's milliseconds agree with the stored ones for these dates.
        #expect(albums.allSatisfy { Timestamp.milliseconds($0.createdAt) == ReferenceMilliseconds.of($0.createdAt) })
        try store.write(.default) { writer in
            for (index, album) in albums.enumerated() { try writer.insert(album, at: index) }
        }
        // The store itself, anchored at the stored key, pages exactly.
        for sort in [AlbumSort(.createdAt), AlbumSort(.createdAt, descending: true)] {
            let expected = Reference.order(albums, .all, sort)
            var walked: [Album] = []
            var anchor = SortAnchor.start
            for _ in 0...albums.count {
                let page = try store.read(.default) { try $0.albums(matching: .all, sort: sort, from: anchor, limit: 4) } ?? []
                walked += page
                guard page.count == 4, let last = page.last else { break }
                anchor = .afterValue(.integer(ReferenceMilliseconds.of(last.createdAt)), last.id)
            }
            #expect(walked.map(\.id) == expected.map(\.id), "sort \(sort), exact keys")
        }
        // With the facade's `SortValue.of` keys.
        for sort in [AlbumSort(.createdAt), AlbumSort(.createdAt, descending: true)] {
            let expected = Reference.order(albums, .all, sort)
            var walked: [Album] = []
            var anchor = SortAnchor.start
            for _ in 0...albums.count {
                let page = try store.read(.default) { try $0.albums(matching: .all, sort: sort, from: anchor, limit: 4) } ?? []
                walked += page
                guard page.count == 4, let last = page.last else { break }
                anchor = .afterValue(SortValue.of(last, for: .createdAt, articles: .standard)!, last.id)
            }
            #expect(walked.map(\.id) == expected.map(\.id), "sort \(sort), SortValue.of keys")
        }
    }

    // MARK: - Plans

    @Test(arguments: sorts)
    func keysetPagesSeekAnIndexWithoutSorting(_ sort: AlbumSort) throws {
        let fixture = Self.fixture
        let last = fixture.library[fixture.library.count / 3]
        let anchor: SortAnchor = sort.field == .position
            ? .afterAlbum(last.id) : .afterValue(SortValue.of(last, for: sort.field, articles: .standard)!, last.id)
        for (name, filter) in [("none", AlbumFilter.all), ("genre", AlbumFilter(genre: "rock")), ("q", AlbumFilter(text: "an"))] {
            for start in [SortAnchor.start, anchor] {
                // (a search with many matches walks the order like any filter)
                let plans = try fixture.walking.pagePlans(.default, matching: filter, sort: sort, from: start, limit: 51)
                #expect(!plans.isEmpty)
                for plan in plans {
                    #expect(!plan.contains("TEMP B-TREE"), "sort \(sort), filter \(name), \(start): \(plan)")
                    #expect(!plan.contains("SCAN"), "sort \(sort), filter \(name), \(start): \(plan)")
                }
                guard case .afterValue = start else { continue }
                let index = try #require(Self.sortIndex[sort.field])
                let comparison = sort.descending ? ")<(?,?)" : ")>(?,?)"
                #expect(plans.count == 1)
                #expect(plans[0].contains("USING INDEX \(index) (library=? AND (") && plans[0].contains(comparison),
                        "sort \(sort), filter \(name): \(plans[0])")
            }
        }
        // A search with more matches walks the same index, testing each row id against the
        // search index's matches first.
        for start in [SortAnchor.start, anchor] {
            let plans = try fixture.filtered.pagePlans(.default, matching: AlbumFilter(text: "an"), sort: sort, from: start, limit: 51)
            for plan in plans {
                #expect(!plan.contains("TEMP B-TREE"), "sort \(sort), \(start): \(plan)")
                #expect(plan.contains("LIST SUBQUERY") == (plan == plans.last), "sort \(sort), \(start): \(plan)")
            }
        }
        // A search with few matches starts from the matches the search index listed, reads
        // just their rows and sorts them (after the rest of the anchor's bucket, in the
        // position order).
        for start in [SortAnchor.start, anchor] {
            let plans = try fixture.indexed.pagePlans(.default, matching: AlbumFilter(text: "an"), sort: sort, from: start, limit: 51)
            let fromIndex = plans.last ?? ""
            #expect(fromIndex.hasPrefix("SCAN m VIRTUAL TABLE"), "sort \(sort), \(start): \(fromIndex)")
            #expect(fromIndex.contains("SEARCH a USING INTEGER PRIMARY KEY (rowid=?)"), "sort \(sort), \(start): \(fromIndex)")
        }
        if sort == .position {
            // Position pages walk the buckets in order, then the albums in each by position.
            let plans = try fixture.store.pagePlans(.default, matching: .all, sort: sort, from: anchor, limit: 51)
            #expect(plans.count == 2)
            #expect(plans[0].contains("USING INDEX albums_by_position (bucket=? AND pos>?)"), "\(plans[0])")
            #expect(plans[1].contains("USING PRIMARY KEY (library=? AND ord>?)"), "\(plans[1])")
            #expect(plans[1].contains("USING INDEX albums_by_position (bucket=?)"), "\(plans[1])")
        }
    }

    /// A stretch of a value order (what a view's offset counts and reads) seeks the sort's index
    /// from both ends: the count reads the index alone, the page after `skipping` steps over
    /// index entries; neither sorts nor scans.
    @Test(arguments: sorts.filter { $0.field != .position })
    func stretchesOfAValueOrderSeekTheirIndex(_ sort: AlbumSort) throws {
        let fixture = Self.fixture
        let (low, high) = (fixture.library[fixture.library.count / 3], fixture.library[fixture.library.count / 2])
        let index = try #require(Self.sortIndex[sort.field])
        for (name, filter) in [("none", AlbumFilter.all), ("genre", AlbumFilter(genre: "rock"))] {
            for range in [SortRange(after: SortKey.of(low, for: sort.field, articles: .standard)), SortRange(before: SortKey.of(high, for: sort.field, articles: .standard)),
                          SortRange(after: SortKey.of(low, for: sort.field, articles: .standard), before: SortKey.of(high, for: sort.field, articles: .standard))]
            {
                let plans = try fixture.store.rangePlans(.default, matching: filter, sort: sort, in: range, skipping: 100, limit: 1)
                #expect(plans.count == 2)
                for plan in plans {
                    // The count's outer query reads its subquery's rows ("SCAN counted"), not a table.
                    let own = plan.replacingOccurrences(of: "SCAN counted", with: "")
                    #expect(plan.contains("INDEX \(index) (library=? AND ("), "sort \(sort), filter \(name), \(range): \(plan)")
                    #expect(!own.contains("TEMP B-TREE") && !own.contains("SCAN"), "sort \(sort), filter \(name), \(range): \(plan)")
                }
                // Unfiltered, the count reads the index alone (the year's key is a virtual column,
                // which SQLite reads from the row: that count visits the rows it counts).
                if filter.isEmpty && sort.field != .year {
                    #expect(plans[0].contains("COVERING INDEX"), "the count reads no row: \(plans[0])")
                }
            }
        }
    }

    // MARK: - Concurrent changes

    /// Pages through the facade (cursors as clients get them) while another thread inserts and
    /// deletes at random places: every album present throughout shows up exactly once.
    @Test(arguments: [AlbumSort.position, AlbumSort(.position, descending: true), AlbumSort(.title), AlbumSort(.year, descending: true)])
    func pagingWhileAnotherThreadWrites(_ sort: AlbumSort) throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 8)
        var random = SeededGenerator(seed: 31)
        let initial = (0..<1500).map { _ in Generated.album(using: &random) }
        try store.write(.default) { writer in
            for (index, album) in initial.enumerated() { try writer.insert(album, at: index) }
        }
        let facade = LibraryFacade(
            store: store, clock: { Date(timeIntervalSince1970: 1_700_000_000) }, ids: .random(clock: { Date() }))
        let shared = Shared()
        let writer = Thread {
            var random = SeededGenerator(seed: 32)
            while !shared.stop.load(ordering: .relaxed) {
                do {
                    // Each write records its change, as the facade does: cursor walks replay them.
                    try store.write(.default) { writer in
                        let count = try writer.count()
                        let change: (LibraryChange.Kind, AlbumID, Int)
                        if Bool.random(using: &random) || count < 500 {
                            let album = Generated.album(using: &random)
                            let index = Int.random(in: 0...count, using: &random)
                            try writer.insert(album, at: index)
                            change = (.added, album.id, index)
                        } else {
                            let index = Int.random(in: 0..<count, using: &random)
                            let album = try writer.album(at: index)!
                            try writer.delete(id: album.id)
                            shared.deleted.withLock { _ = $0.insert(album.id) }
                            change = (.deleted, album.id, index)
                        }
                        let version = try writer.bumpVersion()
                        try writer.recordChange(LibraryChange(
                            version: version, kind: change.0, id: change.1, index: change.2, recordedAt: Date()))
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
            let page = try facade.page(request)
            pages += 1
            for item in page.items { seen[item.album.id, default: 0] += 1 }
            guard let next = page.next else { break }
            request.start = .cursor(next)
            if pages % 10 == 0 { Thread.sleep(forTimeInterval: 0.0005) }  // a slower reader, to let the writer in: not a wait
        }
        shared.stop.store(true, ordering: .relaxed)
        #expect(eventually { writer.isFinished }, "the writer stops")
        let gone = shared.deleted.withLock { $0 }
        #expect(shared.writes.load(ordering: .relaxed) > 20, "the writer ran while paging")
        for album in initial where !gone.contains(album.id) {
            #expect(seen[album.id] == 1, "\(album.id) seen \(seen[album.id] ?? 0) times (sort \(sort))")
        }
        let consistency = try store.checkConsistency(.default)
        #expect(consistency.albumCount == (try store.read(.default) { try $0.count() }))
    }

    // MARK: - Helpers

    final class Shared: Sendable {
        let deleted = Mutex<Set<AlbumID>>([])
        let stop = Atomic<Bool>(false)
        let writes = Atomic<Int>(0)
    }

    /// Every album of the query, page after page, each page continuing after the last row of
    /// the previous one (as the facade's cursors do).
    static func walk(_ store: SQLiteAlbumStore, _ filter: AlbumFilter, _ sort: AlbumSort, limit: Int) throws -> [Album] {
        var all: [Album] = []
        var anchor = SortAnchor.start
        for _ in 0...10_000 {
            guard let page = try store.read(.default, { try $0.albums(matching: filter, sort: sort, from: anchor, limit: limit) })
            else {
                Issue.record("page after \(anchor) is nil")
                return all
            }
            #expect(page.count <= limit)
            all += page
            guard page.count == limit, let last = page.last else { return all }
            anchor = sort.field == .position
                ? .afterAlbum(last.id) : .afterValue(SortValue.of(last, for: sort.field, articles: .standard, search: sort.search)!, last.id)
        }
        Issue.record("the walk does not end")
        return all
    }
}

/// The reference order, by the rules of the reader protocol: titles, artists and genres by their UTF-8
/// bytes with ASCII letters folded to lower case, years with a missing year as 0, creation
/// times in milliseconds; ties by album id bytes; descending reverses both.
enum Reference {
    static func order(_ library: [Album], _ filter: AlbumFilter, _ sort: AlbumSort) -> [Album] {
        let matching = library.filter(filter.matches)
        guard sort.field != .position else { return sort.descending ? matching.reversed() : matching }
        let ascending = matching.sorted { a, b in
            if sort.field == .relevance, let search = sort.search, search.rank(a) != search.rank(b) {
                return search.rank(a) < search.rank(b)
            }
            let (x, y) = (key(a, sort.field), key(b, sort.field))
            if x != y { return x.lexicographicallyPrecedes(y) }
            return Array(a.id.rawValue.utf8).lexicographicallyPrecedes(Array(b.id.rawValue.utf8))
        }
        return sort.descending ? ascending.reversed() : ascending
    }

    /// A byte string that orders like the field (integers offset to unsigned, big-endian).
    private static func key(_ album: Album, _ field: AlbumSort.Field) -> [UInt8] {
        func integer(_ value: Int64) -> [UInt8] {
            let biased = UInt64(bitPattern: value) ^ (1 << 63)
            return (0..<8).reversed().map { UInt8(truncatingIfNeeded: biased >> (8 * $0)) }
        }
        switch field {
        case .title: return Array(SortText.key(album.title).utf8)
        case .artist: return Array(SortText.artistKey(album.artist, ignoring: .standard).utf8)
        case .genre: return Array(SortText.key(album.genre).utf8)
        case .year: return integer(Int64(album.year ?? 0))
        case .createdAt: return integer(ReferenceMilliseconds.of(album.createdAt))
        case .position, .relevance: return []
        }
    }
}

enum ReferenceMilliseconds {
    /// The stored milliseconds of a date the domain made from whole milliseconds.
    static func of(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
}

/// Random albums with many ties and the awkward characters.
enum Generated {
    static let words = ["an", "Angel", "ANGEL", "angel", "Blue", "blue", "Café", "CAFÉ", "café", "Zebra", "zebra", "_Oh",
                        "100%", "back\\slash", "Night", "night", "[bracket]", "Ébène", "über", "Über", "a", "A", "", "Z",
                        // Longer than the prefixes the search index keeps lists for (8 characters).
                        "Nightingale", "nightingales", "Electronic"]
    static let artists = ["The Beatles", "the beatles", "THE BEATLES", "Nirvana", "nirvana", "Björk", "BJÖRK", "ABBA",
                          "abba", "Miles Davis", "miles davis", "Zappa", "_Under", "50% Off"]
    static let genres = ["Rock", "rock", "ROCK", "Jazz", "jazz", "Pop", "Classical", "Électro", "Electronica", "Electronic"]

    static func album(using random: inout SeededGenerator) -> Album {
        let wordCount = Int.random(in: 1...3, using: &random)
        var title = (0..<wordCount).map { _ in words.randomElement(using: &random)! }.joined(separator: " ")
            .trimmingCharacters(in: .whitespaces)
        if title.isEmpty { title = "Untitled" }
        let year: Int? = Int.random(in: 0..<6, using: &random) == 0 ? nil : Int.random(in: 1950...2025, using: &random)
        // Few distinct creation times, so they tie too.
        let millis = 1_600_000_000_000 + Int64(Int.random(in: 0..<400, using: &random)) * 86_400_123
        return Album(
            id: Fixtures.randomID(using: &random), title: title, artist: artists.randomElement(using: &random)!,
            genre: genres.randomElement(using: &random)!, year: year, coverUrl: nil,
            createdAt: Timestamp.date(milliseconds: millis), updatedAt: Timestamp.date(milliseconds: millis))
    }
}
