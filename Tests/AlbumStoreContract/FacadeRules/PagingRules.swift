@testable import BlueLibraryAPI
import Essentials
import Foundation
import Synchronization
import Testing
import Library

struct PagingRules {
    let factory: AlbumStoreFactory

    /// A keyed tag for these tests (the server's is HMAC-SHA256 from libcrypto, tested in
    /// CryptoTests): FNV-1a of key and message, spread over 16 bytes.
    static func seal(key: String = "test-key") -> CursorSeal {
        CursorSeal(tagLength: 16) { message in
            let first = FNV1a.hash(Array(key.utf8) + message), second = FNV1a.hash(message + Array(key.utf8))
            return withUnsafeBytes(of: (first, second)) { Array($0) }
        }
    }
    let seal = PagingRules.seal()

    /// Walks every page of `query` and returns the albums in order.
    func walk(_ facade: LibraryFacade, _ query: AlbumQuery = AlbumQuery(), limit: Int) throws -> [ListedAlbum] {
        var items: [ListedAlbum] = []
        var start = PageStart.first
        while true {
            let page = try facade.page(PageRequest(query: query, start: start, limit: limit))
            items += page.items
            guard let next = page.next else { return items }
            // Round-trip through the wire form, as a client would.
            start = .cursor(try PageCursor.decode(next.encoded(sealedWith: seal), for: query, seal: seal))
        }
    }

    func positionPagesCarryIndexesAndEndWithNoNext() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        let first = try fixture.facade.page(PageRequest(limit: 2))
        #expect(first.items.map(\.album.title) == ["Best of Bowie", "It's My Life"])
        #expect(first.items.map(\.index) == [0, 1])
        #expect(first.next != nil)
        let all = try walk(fixture.facade, limit: 2)
        #expect(all.map(\.index) == [0, 1, 2, 3, 4])
        #expect(try fixture.facade.page(PageRequest(limit: 5)).next == nil, "exactly one full page has no next")
    }

    func everySortAndFilterMatchesTheReference() throws {
        let fixture = try FacadeFixture(factory)
        var generator = SystemRandomNumberGenerator()
        let words = ["alpha", "Beta", "gamma", "Delta", "echo", "Zulu", "bravo", "ALPHA"]
        for n in 0..<120 {
            let year: Int? = n % 7 == 0 ? nil : 1960 + Int.random(in: 0..<40, using: &generator)
            let title = "\(words.randomElement(using: &generator)!) \(n % 9)"
            _ = try fixture.facade.add(
                AlbumInput(title: title, artist: words.randomElement(using: &generator)!,
                           genre: ["Pop", "Rock", "Jazz"].randomElement(using: &generator)!, year: year),
                at: Int.random(in: 0...n, using: &generator))
            fixture.clock.advance(milliseconds: Int64.random(in: 0...2, using: &generator))
        }
        let library = try fixture.facade.page(PageRequest(limit: 500)).items.map(\.album)
        let filters = [AlbumFilter.all, AlbumFilter(text: "ALP"), AlbumFilter(artist: "beta"), AlbumFilter(genre: "rock"),
                       AlbumFilter(yearFrom: 1970, yearTo: 1985), AlbumFilter(text: "a", genre: "Pop", yearFrom: 1965)]
        for field in AlbumSort.Field.allCases {
            for descending in [false, true] {
                for filter in filters {
                    let query = AlbumQuery(sort: AlbumSort(field, descending: descending), filter: filter)
                    var expected = library.filter(filter.matches)
                    if field == .position {
                        if descending { expected.reverse() }
                    } else {
                        expected.sort { query.sort.orders($0, before: $1) }
                    }
                    let got = try walk(fixture.facade, query, limit: 7).map(\.album.id)
                    #expect(got == expected.map(\.id), "\(query.sort) \(filter)")
                    let total = try fixture.facade.page(PageRequest(query: query, limit: 1, includeTotal: true)).total
                    #expect(total == expected.count)
                }
            }
        }
    }

    func pagesStayStableWhileAlbumsAreInsertedAndDeleted() throws {
        let fixture = try FacadeFixture(factory)
        for n in 0..<200 { _ = try fixture.facade.add(input("Album \(n)")) }
        let survivors = Set(try fixture.facade.page(PageRequest(limit: 500)).items.map(\.album.id))
        var deletable = survivors  // albums this test may delete (then they are not survivors)
        var protected = Set<AlbumID>()
        var seen: [AlbumID] = []
        var start = PageStart.first
        var generator = SystemRandomNumberGenerator()
        var round = 0
        while true {
            let page = try fixture.facade.page(PageRequest(start: start, limit: 9))
            seen += page.items.map(\.album.id)
            guard let next = page.next else { break }
            start = .cursor(next)
            // Between pages: insert anywhere, and delete albums — including the page's last ones.
            round += 1
            for _ in 0..<3 {
                let count = try fixture.facade.count()
                _ = try fixture.facade.add(input("New \(round)"), at: Int.random(in: 0...count, using: &generator))
            }
            if round % 2 == 0, let victim = page.items.last?.album.id, deletable.contains(victim) {
                _ = try fixture.facade.delete(id: victim)
                deletable.remove(victim)
                protected.insert(victim)
            }
            if let victim = deletable.randomElement(using: &generator) {
                _ = try fixture.facade.delete(id: victim)
                deletable.remove(victim)
                protected.insert(victim)
            }
        }
        let throughout = survivors.subtracting(protected)
        let counts = Dictionary(grouping: seen.filter(throughout.contains), by: { $0 }).mapValues(\.count)
        #expect(counts.count == throughout.count, "every album present throughout appears")
        #expect(counts.values.allSatisfy { $0 == 1 }, "and exactly once")
    }

    func badCursorsAndLimitsAreRefused() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        let page = try fixture.facade.page(PageRequest(limit: 2))
        let cursor = try #require(page.next).encoded(sealedWith: seal)
        #expect(try PageCursor.decode(cursor, for: AlbumQuery(), seal: seal) == page.next)
        // Sealed under another key
        #expect(throws: LibraryError.self) { try PageCursor.decode(cursor, for: AlbumQuery(), seal: Self.seal(key: "other")) }
        // Another query
        #expect(throws: LibraryError.self) { try PageCursor.decode(cursor, for: AlbumQuery(sort: AlbumSort(.title)), seal: seal) }
        // Tampered: one character changed
        var tampered = Array(cursor)
        tampered[tampered.count / 2] = tampered[tampered.count / 2] == "A" ? "B" : "A"
        #expect(throws: LibraryError.self) { try PageCursor.decode(String(tampered), for: AlbumQuery(), seal: seal) }
        #expect(throws: LibraryError.self) { try PageCursor.decode(String(cursor.dropLast(3)), for: AlbumQuery(), seal: seal) }
        #expect(throws: LibraryError.self) { try PageCursor.decode("not a cursor", for: AlbumQuery(), seal: seal) }
        // Sealed, but saying what the server never says: a negative boundary, a source past the
        // versions, no versions, too many exceptions, a value cursor for the position order.
        let mark = try #require(page.next?.mark)
        let anchor = try #require(page.items.first?.album.id)
        let scope = PageCursor.scope(library: .default)
        func positional(_ mark: WalkMark?) -> PageCursor {
            PageCursor(fingerprint: AlbumQuery().fingerprint, scope: scope, mark: mark)
        }
        for bad in [positional(WalkMark(versions: mark.versions, source: 0, boundary: -1)),
                    positional(WalkMark(versions: mark.versions, source: 1, boundary: 0)),
                    positional(WalkMark(versions: [], source: 0, boundary: 0)),
                    positional(WalkMark(versions: mark.versions, source: 0, boundary: 0, exceptions: Array(
                        repeating: WalkException(id: anchor, seen: true, source: 0), count: WalkMark.maxExceptions + 1))),
                    PageCursor(fingerprint: AlbumQuery().fingerprint, scope: scope, lastValue: .text("x"), lastID: anchor)] {
            #expect(throws: LibraryError.self) { try PageCursor.decode(bad.encoded(sealedWith: seal), for: AlbumQuery(), seal: seal) }
        }
        // A cursor of another library is refused by the page.
        let foreign = PageCursor(fingerprint: AlbumQuery().fingerprint, scope: PageCursor.scope(library: LibraryID(rawValue: "jazz")),
                                 mark: mark)
        #expect(libraryError { _ = try fixture.facade.page(PageRequest(start: .cursor(foreign), limit: 2)) }?.code == "invalid-cursor")
        #expect(throws: LibraryError.self) { try fixture.facade.page(PageRequest(limit: 0)) }
        #expect(throws: LibraryError.self) { try fixture.facade.page(PageRequest(limit: 501)) }
        #expect(throws: LibraryError.self) { try AlbumSort.parse("colour") }
        #expect(throws: LibraryError.self) {
            try fixture.facade.page(PageRequest(query: AlbumQuery(filter: AlbumFilter(yearFrom: 2000, yearTo: 1990))))
        }
    }

    /// The facade never trusts a cursor's numbers, whoever made it: a boundary at either end
    /// of `Int` continues at a valid place instead of overflowing.
    func aCursorWhoseAnchorsAreGoneNeverOverflows() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        let version = try fixture.facade.version()
        for end in [0, 3, 5, Int.max - 1, Int.max] {
            let mark = WalkMark(versions: [version], source: 0, boundary: end)
            let cursor = PageCursor(fingerprint: AlbumQuery().fingerprint, scope: PageCursor.scope(library: .default), mark: mark)
            let page = try fixture.facade.page(PageRequest(start: .cursor(cursor), limit: 2))
            #expect(page.items.count <= 2, "end \(end)")
        }
    }

    func currentVersionIsRememberedUntilTheNextCommit() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        let before = try fixture.facade.currentVersion()
        #expect(before == (try fixture.facade.version()))
        _ = try fixture.facade.add(input("Low"))
        #expect(try fixture.facade.currentVersion() == before + 1)
    }
}

extension FacadeRules {
    static let pagingRules: [ContractCheck] = [
        ContractCheck("positionPagesCarryIndexesAndEndWithNoNext") { try PagingRules(factory: $0).positionPagesCarryIndexesAndEndWithNoNext() },
        ContractCheck("everySortAndFilterMatchesTheReference") { try PagingRules(factory: $0).everySortAndFilterMatchesTheReference() },
        ContractCheck("pagesStayStableWhileAlbumsAreInsertedAndDeleted") { try PagingRules(factory: $0).pagesStayStableWhileAlbumsAreInsertedAndDeleted() },
        ContractCheck("badCursorsAndLimitsAreRefused") { try PagingRules(factory: $0).badCursorsAndLimitsAreRefused() },
        ContractCheck("aCursorWhoseAnchorsAreGoneNeverOverflows") { try PagingRules(factory: $0).aCursorWhoseAnchorsAreGoneNeverOverflows() },
        ContractCheck("currentVersionIsRememberedUntilTheNextCommit") { try PagingRules(factory: $0).currentVersionIsRememberedUntilTheNextCommit() },
    ]
}
