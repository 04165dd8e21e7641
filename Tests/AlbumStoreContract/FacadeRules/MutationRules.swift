@testable import BlueLibraryAPI
import Essentials
import Foundation
import Testing
import Library

struct MutationRules {
    let factory: AlbumStoreFactory

    func readByIDAndIndex() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        let third = try fixture.facade.album(at: 2)
        #expect(third.album.title == "Nothing Like The Sun")
        #expect(try fixture.facade.album(id: third.album.id) == third)
    }

    func indexedAlbumJSON() throws {
        let fixture = try FacadeFixture(factory)
        let added = try fixture.facade.add(input("T"), client: "phone")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(added), as: UTF8.self)
        #expect(json == #"{"artist":"Artist","coverUrl":null,"createdAt":"2023-11-14T22:13:20.000Z","genre":"Pop","#
            + #""id":"\#(added.album.id)","index":0,"title":"T","updatedAt":"2023-11-14T22:13:20.000Z","year":null}"#)
        var handWritten: [UInt8] = []
        added.album.appendJSON(to: &handWritten)
        #expect(try JSONDecoder().decode(Album.self, from: Data(handWritten)) == added.album)
    }

    func readErrors() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        #expect(throws: LibraryError.indexOutOfRange(index: 5, count: 5)) { try fixture.facade.album(at: 5) }
        #expect(throws: LibraryError.indexOutOfRange(index: -1, count: 5)) { try fixture.facade.album(at: -1) }
        #expect(LibraryError.indexOutOfRange(index: 5, count: 5).message
            == "index 5 is out of range: the library has 5 albums, so use 0 to 4")
        let unknown = AlbumID("01HZY8Q6V9T3X2K7M4N5P6R7S8")!
        #expect(throws: LibraryError.notFound(unknown)) { try fixture.facade.album(id: unknown) }
    }

    func offsetPages() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        let page = try fixture.facade.page(PageRequest(start: .offset(3), limit: 10, includeTotal: true))
        #expect(page.items.map(\.index) == [3, 4])
        #expect(page.total == 5 && page.version == 1 && page.next == nil)
        #expect(try fixture.facade.page(PageRequest(start: .offset(0), limit: 2)).next != nil)
        #expect(fieldErrors { _ = try fixture.facade.page(PageRequest(start: .offset(-1))) }.map(\.field) == ["offset"])
        #expect(fieldErrors { _ = try fixture.facade.page(PageRequest(limit: 501)) }.map(\.field) == ["limit"])
    }

    func deleteByIDAndIndex() throws {
        // Given the seed albums
        let fixture = try FacadeFixture(factory, seeded: true)
        let bowie = try fixture.facade.album(at: 0).album
        // When deleting Bowie by id and then index 2
        let deleted = try fixture.facade.delete(id: bowie.id)
        let deletedAt = try fixture.facade.delete(at: 2)
        // Then both are gone and the calls report what was deleted and where
        #expect(deleted == IndexedAlbum(album: bowie, index: 0))
        #expect(deletedAt.album.title == "Staring at the Sun")
        #expect(try fixture.titles() == ["It's My Life", "Nothing Like The Sun", "American Pie"])
    }

    func deleteErrors() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        #expect(throws: LibraryError.indexOutOfRange(index: 5, count: 5)) { try fixture.facade.delete(at: 5) }
        let unknown = AlbumID("01HZY8Q6V9T3X2K7M4N5P6R7S8")!
        #expect(throws: LibraryError.notFound(unknown)) { try fixture.facade.delete(id: unknown) }
        #expect(try fixture.facade.count() == 5)
        #expect(try fixture.facade.version() == 1)
        #expect(LibraryError.indexOutOfRange(index: 0, count: 0).message == "index 0 is out of range: the library is empty")
    }

    func move() throws {
        let fixture = try FacadeFixture(factory)
        let albums = try fixture.add("A", "B", "C", "D")
        // When moving A to the end and D to the front
        #expect(try fixture.facade.move(id: albums[0].id, to: 3).index == 3)
        #expect(try fixture.titles() == ["B", "C", "D", "A"])
        _ = try fixture.facade.move(id: albums[3].id, to: 0)
        #expect(try fixture.titles() == ["D", "B", "C", "A"])
        // Then an index past the end (or negative) is refused, not clamped
        #expect(throws: LibraryError.indexOutOfRange(index: 4, count: 4)) { try fixture.facade.move(id: albums[1].id, to: 4) }
        #expect(throws: LibraryError.indexOutOfRange(index: -1, count: 4)) { try fixture.facade.move(id: albums[1].id, to: -1) }
    }

    func update() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        let bowie = try fixture.facade.album(at: 0).album
        fixture.clock.advance(milliseconds: 5000)
        let updated = try fixture.facade.update(id: bowie.id, patch: AlbumPatch(year: .set(1993)))
        #expect(updated.album.year == 1993 && updated.index == 0)
        #expect(updated.album.createdAt == bowie.createdAt)
        #expect(updated.album.updatedAt == Timestamp.truncated(fixture.clock.now))
        #expect(try fixture.facade.album(id: bowie.id).album == updated.album)
    }

    func invalidUpdate() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        let bowie = try fixture.facade.album(at: 0).album
        let errors = fieldErrors { _ = try fixture.facade.update(id: bowie.id, patch: AlbumPatch(title: .remove)) }
        #expect(errors.map(\.field) == ["title"])
        #expect(try fixture.facade.album(at: 0).album == bowie)
    }
}

extension FacadeRules {
    static let mutationRules: [ContractCheck] = [
        ContractCheck("albums are addressable by id and by index") { try MutationRules(factory: $0).readByIDAndIndex() },
        ContractCheck("an indexed album encodes flat, with RFC 3339 dates and explicit nulls") { try MutationRules(factory: $0).indexedAlbumJSON() },
        ContractCheck("reading out of range or an unknown id gives a clear error") { try MutationRules(factory: $0).readErrors() },
        ContractCheck("offset pages carry indexes, total and version; bad paging is a field error") { try MutationRules(factory: $0).offsetPages() },
        ContractCheck("delete by id and by index") { try MutationRules(factory: $0).deleteByIDAndIndex() },
        ContractCheck("deleting out of range or an unknown id changes nothing") { try MutationRules(factory: $0).deleteErrors() },
        ContractCheck("move puts the album at the target index; out of range is an error") { try MutationRules(factory: $0).move() },
        ContractCheck("update applies the patch, keeps createdAt and sets updatedAt") { try MutationRules(factory: $0).update() },
        ContractCheck("an invalid patched result is refused and nothing changes") { try MutationRules(factory: $0).invalidUpdate() },
    ]
}
