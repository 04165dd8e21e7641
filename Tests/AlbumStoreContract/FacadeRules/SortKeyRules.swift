import BlueLibraryAPI
import Foundation
import Library
import Testing

/// Title and artist sorts by their folded keys (`SortText`), the artist without a leading
/// article, and a change of the articles remaking the keys (`LibraryFacade.setSortArticles`),
/// on every store alike.
struct SortKeyRules {
    let factory: AlbumStoreFactory

    static let albums: [(title: String, artist: String)] = [
        ("Ärger", "The Beatles"), ("apfel", "Björk"), ("Zebra", "bjork"), ("Émile", "A Tribe Called Quest"),
        ("emile", "Abba"), ("Öl", "The The"), ("Ostern", "Theatre of Tragedy"), ("Виктор", "Кино"), ("виктор", "An Pierlé"),
        ("  Spaced   out ", "  The   Cure"), ("Straße", "Sigur Rós"), ("strasse", "Motörhead"),
    ]

    func titlesAndArtistsSortByTheirFoldedKeys() throws {
        let fixture = try FacadeFixture(factory)
        for album in Self.albums {
            _ = try fixture.facade.add(AlbumInput(title: album.title, artist: album.artist, genre: "Rock", year: nil))
        }
        let walker = PagingRules(factory: factory)
        for (field, articles) in [(AlbumSort.Field.title, SortArticles.standard), (.artist, .standard)] {
            for descending in [false, true] {
                let sort = AlbumSort(field, descending: descending)
                let all = try fixture.storedAlbums()
                let expected = all.sorted { sort.orders($0, before: $1, articles: articles) }
                // Walked in pages of 2 and 5: the keyset cursors agree with the one sorted list.
                for limit in [2, 5] {
                    let walked = try walker.walk(fixture.facade, AlbumQuery(sort: sort), limit: limit).map(\.album)
                    #expect(walked.map(\.id) == expected.map(\.id), "\(sort) by \(limit)")
                }
            }
        }
        // What a person expects: accents and case fold, "The Beatles" under B, "The The" under T.
        let byTitle = try walker.walk(fixture.facade, AlbumQuery(sort: AlbumSort(.title)), limit: 50).map(\.album.title)
        #expect(byTitle.prefix(2).map { SortText.key($0) } == ["apfel", "arger"])
        let byArtist = try walker.walk(fixture.facade, AlbumQuery(sort: AlbumSort(.artist)), limit: 50).map(\.album.artist)
        #expect(byArtist.first == "Abba")
        func place(_ artist: String) throws -> Int { try #require(byArtist.firstIndex { $0.contains(artist) }, "\(artist)") }
        #expect(try place("The Beatles") < place("Björk"))
        #expect(try place("The The") < place("Theatre of Tragedy"), "\"the\" < \"theatre…\"")
        #expect(try place("Theatre of Tragedy") < place("A Tribe Called Quest"))
        #expect(byArtist.last == "Кино")
    }

    func changingTheArticlesRemakesTheKeysInOneVersion() throws {
        let fixture = try FacadeFixture(factory)
        for album in Self.albums {
            _ = try fixture.facade.add(AlbumInput(title: album.title, artist: album.artist, genre: "Rock", year: nil))
        }
        let query = AlbumQuery(sort: AlbumSort(.artist))
        let before = try fixture.facade.page(PageRequest(query: query, limit: 3))
        let versionBefore = try fixture.facade.currentVersion()
        #expect(try fixture.facade.sortArticles() == .standard)

        // The same articles again: nothing to do, no version.
        #expect(try fixture.facade.setSortArticles(.standard) == false)
        #expect(try fixture.facade.currentVersion() == versionBefore)

        // No article at all: "The Beatles" sorts under T now, in one new version, a `replaced` change.
        #expect(try fixture.facade.setSortArticles(.none) == true)
        #expect(try fixture.facade.sortArticles() == .none)
        let versionAfter = try fixture.facade.currentVersion()
        #expect(versionAfter == versionBefore + 1)
        #expect(try fixture.facade.changes(since: versionBefore, limit: 10).changes.map(\.kind) == [.replaced])
        let albums = try fixture.storedAlbums()
        let expected = albums.sorted { AlbumSort(.artist).orders($0, before: $1, articles: .none) }
        let walked = try PagingRules(factory: factory).walk(fixture.facade, query, limit: 4).map(\.album)
        #expect(walked.map(\.id) == expected.map(\.id))
        #expect(walked.first?.artist == "A Tribe Called Quest", "\"a tribe…\" < \"abba\"")
        let cure = try #require(walked.firstIndex { $0.artist.contains("Cure") })
        #expect(try cure < #require(walked.firstIndex { $0.artist == "The The" }), "\"the cure\" < \"the the\"")

        // Articles that change no key of the library: stored, no version.
        #expect(try fixture.facade.setSortArticles(SortArticles(["Der"])) == false)
        #expect(try fixture.facade.sortArticles() == SortArticles(["der"]))
        #expect(try fixture.facade.currentVersion() == versionAfter)

        // A cursor made with the old articles goes on after its album's new key: the rest of
        // the walk is exactly the albums after it in the new order.
        guard let next = before.next, let last = before.items.last?.album else {
            Issue.record("the first page has a next")
            return
        }
        #expect(next.lastArticles == .standard)
        let page = try fixture.facade.page(PageRequest(query: query, start: .cursor(next), limit: 500))
        let newOrder = albums.sorted { AlbumSort(.artist).orders($0, before: $1, articles: SortArticles(["der"])) }
        let position = try #require(newOrder.firstIndex { $0.id == last.id })
        #expect(page.items.map(\.album.id) == newOrder[(position + 1)...].map(\.id))
    }

    func newAlbumsAndEditsTakeTheLibrarysArticles() throws {
        let fixture = try FacadeFixture(factory)
        try fixture.facade.setSortArticles(SortArticles(["Die", "Der"]))
        let added = try fixture.facade.add(AlbumInput(title: "Mensch", artist: "Die Ärzte", genre: "Rock", year: nil)).album
        _ = try fixture.facade.add(AlbumInput(title: "Sehnsucht", artist: "Rammstein", genre: "Rock", year: nil))
        _ = try fixture.facade.add(AlbumInput(title: "Abbey Road", artist: "The Beatles", genre: "Rock", year: nil))
        let byArtist = try fixture.facade.page(PageRequest(query: AlbumQuery(sort: AlbumSort(.artist)), limit: 10)).items.map(\.album.artist)
        #expect(byArtist == ["Die Ärzte", "Rammstein", "The Beatles"], "ärzte < rammstein < the beatles")
        _ = try fixture.facade.update(id: added.id, patch: AlbumPatch(artist: .set("Der Plan")))
        let edited = try fixture.facade.page(PageRequest(query: AlbumQuery(sort: AlbumSort(.artist)), limit: 10)).items.map(\.album.artist)
        #expect(edited == ["Der Plan", "Rammstein", "The Beatles"], "plan < rammstein < the beatles")
    }
}

/// A walk by relevance (`sort=relevance`) is a keyset walk on (rank, id): exact under adds and
/// deletes between its pages.
struct RelevanceRules {
    let factory: AlbumStoreFactory

    func aRelevanceWalkSeesEveryAlbumThatStaysOnce() throws {
        let fixture = try FacadeFixture(factory)
        let names = ["Love", "Lovely", "Love Song", "Song of Love", "Blue", "Loveless", "Love Love"]
        var random = SystemRandomNumberGenerator()
        func input(_ n: Int) throws -> AlbumInput {
            try AlbumInput(
                title: names[n % names.count] + " \(n)", artist: ["Love", "Arthur", "Lovers"][n % 3],
                genre: ["Love Rock", "Pop"][n % 2], year: nil)
        }
        var ids: [AlbumID] = []
        for n in 0..<40 { ids.append(try fixture.facade.add(try input(n)).album.id) }
        let query = AlbumQuery(sort: AlbumSort(.relevance), filter: AlbumFilter(text: "love"))
        let before = Set(try fixture.facade.page(PageRequest(query: query, limit: 500)).items.map(\.album.id))
        var seen: [AlbumID] = []
        var deleted: Set<AlbumID> = []
        var start = PageStart.first
        var n = 40
        while true {
            let page = try fixture.facade.page(PageRequest(query: query, start: start, limit: 4))
            seen += page.items.map(\.album.id)
            guard let next = page.next else { break }
            start = .cursor(next)
            // Between pages: one album added, one deleted (seen or not).
            ids.append(try fixture.facade.add(try input(n)).album.id)
            n += 1
            let victim = ids.remove(at: Int.random(in: 0..<ids.count, using: &random))
            _ = try fixture.facade.delete(id: victim)
            deleted.insert(victim)
        }
        #expect(seen.count == Set(seen).count, "no album twice")
        let stayed = before.subtracting(deleted)
        #expect(stayed.isSubset(of: Set(seen)), "every album there from start to end is seen")
        // And the order of what was seen is the order of ranks.
        let search = try #require(query.sort.search)
        let final = try fixture.storedAlbums()
        let ranks = seen.compactMap { id in final.first { $0.id == id } }.map { search.rank($0) }
        #expect(ranks == ranks.sorted())
    }
}

extension FacadeRules {
    static let sortKeyRules: [ContractCheck] = [
        ContractCheck("aRelevanceWalkSeesEveryAlbumThatStaysOnce") { try RelevanceRules(factory: $0).aRelevanceWalkSeesEveryAlbumThatStaysOnce() },
        ContractCheck("titlesAndArtistsSortByTheirFoldedKeys") { try SortKeyRules(factory: $0).titlesAndArtistsSortByTheirFoldedKeys() },
        ContractCheck("changingTheArticlesRemakesTheKeysInOneVersion") {
            try SortKeyRules(factory: $0).changingTheArticlesRemakesTheKeysInOneVersion()
        },
        ContractCheck("newAlbumsAndEditsTakeTheLibrarysArticles") { try SortKeyRules(factory: $0).newAlbumsAndEditsTakeTheLibrarysArticles() },
    ]
}
