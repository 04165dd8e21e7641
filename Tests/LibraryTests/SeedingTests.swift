import AlbumStoreContract
import TestThreads
import Testing
@testable import Library

@Suite("Seeding", .ownThreads)
struct SeedingTests {
    @Test("a brand-new library gets exactly the five tutorial albums, in order")
    func seedsFive() throws {
        // Given a new library
        let fixture = try Fixture()
        // When it is seeded
        let seeded = try fixture.facade.seedIfEmpty()
        // Then the five albums are there with the tutorial's data
        #expect(seeded)
        let albums = try fixture.facade.page(PageRequest(limit: 500)).items.map(\.album)
        #expect(albums.map(\.title) == ["Best of Bowie", "It's My Life", "Nothing Like The Sun", "Staring at the Sun", "American Pie"])
        #expect(albums.map(\.artist) == ["David Bowie", "No Doubt", "Sting", "U2", "Madonna"])
        #expect(albums.map(\.year) == [1992, 2003, 1999, 2000, 2000])
        #expect(albums.allSatisfy { $0.genre == "Pop" })
        #expect(albums[0].coverUrl == "https://s3.amazonaws.com/CoverProject/album/album_david_bowie_best_of_bowie.png")
        #expect(albums[4].coverUrl == "https://s3.amazonaws.com/CoverProject/album/album_madonna_american_pie.png")
        #expect(try fixture.facade.version() == 1)
        #expect(try fixture.facade.undoStatus().depth == 0)
    }

    @Test("seeding twice does nothing the second time")
    func idempotent() throws {
        let fixture = try Fixture(seeded: true)
        #expect(try fixture.facade.seedIfEmpty() == false)
        #expect(try fixture.facade.count() == 5)
    }

    @Test("a library the user emptied is never re-seeded")
    func notAfterDeletingAll() throws {
        // Given a seeded library whose albums were all deleted
        let fixture = try Fixture(seeded: true)
        for _ in 0..<5 { try fixture.facade.delete(at: 0) }
        // When seeding is attempted again (a restart)
        let seeded = try fixture.facade.seedIfEmpty()
        // Then the library stays empty
        #expect(!seeded)
        #expect(try fixture.facade.count() == 0)
    }
}
