import Essentials
import Foundation
import Library
import Testing

/// View definitions, view versions and index addressing through a view.
struct ViewRules {
    let factory: AlbumStoreFactory

    func definitionsAreValidatedVersionedAndListed() throws {
        let fixture = try ViewFixture(factory)
        try fixture.create(ViewFixture.jazz, ViewFixture.blues)
        let libraries = fixture.libraries
        let id = ViewID(rawValue: "mix")
        #expect(fieldErrors { _ = try libraries.createView(id: id, sources: []) }.map(\.field) == ["sources"])
        #expect(fieldErrors { _ = try libraries.createView(id: id, sources: [.default, .default]) }.map(\.field) == ["sources"])
        #expect(fieldErrors { _ = try libraries.createView(id: id, sources: [LibraryID(rawValue: "nope")]) }.map(\.field) == ["sources"])
        #expect(fieldErrors {
            _ = try libraries.createView(id: id, sources: (0...32).map { LibraryID(rawValue: "l\($0)") })
        }.map(\.field) == ["sources"])
        #expect(fieldErrors { _ = try libraries.createView(id: id, name: "  ", sources: [.default]) }.map(\.field) == ["name"])
        #expect(fieldErrors {
            _ = try libraries.createView(id: id, sources: [.default], filter: AlbumFilter(yearFrom: 2000, yearTo: 1990))
        }.map(\.field) == ["yearFrom"])
        #expect(try libraries.views().isEmpty, "nothing was saved")

        let made = try libraries.createView(id: id, sources: [ViewFixture.jazz, .default], filter: AlbumFilter(genre: "Rock"))
        let first = Timestamp.milliseconds(fixture.clock.now)
        #expect(made == ViewDefinition(id: id, name: "mix", sources: [ViewFixture.jazz, .default], filter: AlbumFilter(genre: "Rock"), revision: first))
        #expect(libraryError { _ = try libraries.createView(id: id, sources: [.default]) }?.code == "conflict")
        #expect(try libraries.updateView(id) == made, "no change, no new revision")
        let renamed = try libraries.updateView(id, name: "Mix", sources: [ViewFixture.blues])
        #expect(renamed.revision == first + 1 && renamed.name == "Mix" && renamed.sources == [ViewFixture.blues] && renamed.filter == made.filter)
        _ = try libraries.createView(id: ViewID(rawValue: "a-first"), name: "First", sources: [.default])
        #expect(try libraries.views().map(\.id.rawValue) == ["a-first", "mix"])
        try libraries.deleteView(id)
        #expect(libraryError { _ = try libraries.view(id) } == .viewNotFound(id))
        #expect(libraryError { try libraries.deleteView(id) } == .viewNotFound(id))
        #expect(libraryError { _ = try libraries.page(view: id, PageRequest()) } == .viewNotFound(id))
        // Created again under the deleted id: a revision the old view never had.
        fixture.clock.advance(milliseconds: 1)
        let again = try libraries.createView(id: id, sources: [.default])
        #expect(again.revision > renamed.revision)
    }

    func aViewsVersionFollowsItsSourcesAndRevision() throws {
        let fixture = try ViewFixture(factory)
        try fixture.create(ViewFixture.jazz)
        let libraries = fixture.libraries
        let id = ViewID(rawValue: "both")
        let first = try libraries.createView(id: id, sources: [.default, ViewFixture.jazz]).revision
        let before = try libraries.viewVersion(id)
        #expect(before == ViewVersion(revision: first, versions: [0, 0]))
        try fixture.fill(ViewFixture.jazz, 2, prefix: "J")
        #expect(try libraries.viewVersion(id) == ViewVersion(revision: first, versions: [0, 2]))
        let page = try libraries.page(view: id, PageRequest(limit: 1))
        #expect(page.versions == [0, 2] && page.version == 0)
        _ = try libraries.updateView(id, name: "Both")
        #expect(try libraries.viewVersion(id).tag == "\(first + 1):0.2")
        let stale = libraryError { _ = try libraries.page(view: id, PageRequest(start: .cursor(try #require(page.next)), limit: 1)) }
        #expect(stale?.code == "walk-expired", "a cursor of the old definition")
        // A forced delete of a source removes it from the view: a new revision, seen at once.
        let onlyJazz = ViewID(rawValue: "only-jazz")
        let onlyFirst = try libraries.createView(id: onlyJazz, sources: [ViewFixture.jazz]).revision
        try libraries.delete(ViewFixture.jazz, force: true)
        #expect(try libraries.viewVersion(id) == ViewVersion(revision: first + 2, versions: [0]))
        // A view left without sources lists nothing and takes no albums.
        #expect(try libraries.viewVersion(onlyJazz) == ViewVersion(revision: onlyFirst + 1, versions: []))
        let empty = try libraries.page(view: onlyJazz, PageRequest(includeTotal: true))
        #expect(empty.items.isEmpty && empty.next == nil && empty.total == 0)
        #expect(libraryError { _ = try libraries.add(view: onlyJazz, input: input("X")) }?.code == "conflict")
        #expect(libraryError { _ = try libraries.album(view: onlyJazz, at: 0) } == .indexOutOfRange(index: 0, count: 0))
    }

    func indexAddressingActsInTheOwningLibrary() throws {
        let fixture = try ViewFixture(factory)
        try fixture.create(ViewFixture.jazz, ViewFixture.blues)
        try fixture.fill(.default, 2, prefix: "D")
        try fixture.fill(ViewFixture.blues, 3, prefix: "B")
        let libraries = fixture.libraries
        let id = ViewID(rawValue: "all")
        _ = try libraries.createView(id: id, sources: [.default, ViewFixture.jazz, ViewFixture.blues])
        let titles = { try fixture.contents(of: try libraries.view(id)).map(\.album.title) }
        #expect(try titles() == ["D 0", "D 1", "B 0", "B 1", "B 2"])

        let third = try libraries.album(view: id, at: 2)
        #expect(third.album.title == "B 0" && third.library == ViewFixture.blues && third.libraryIndex == 0 && third.index == 2)
        #expect(libraryError { _ = try libraries.album(view: id, at: 5) } == .indexOutOfRange(index: 5, count: 5))
        #expect(libraryError { _ = try libraries.album(view: id, at: -1) } == .indexOutOfRange(index: -1, count: 5))

        let deleted = try libraries.delete(view: id, at: 3)
        #expect(deleted.album.title == "B 1" && deleted.library == ViewFixture.blues && deleted.index == 3 && deleted.libraryIndex == 1)
        #expect(try titles() == ["D 0", "D 1", "B 0", "B 2"])
        _ = try libraries.facade(ViewFixture.blues).undo()
        #expect(try titles() == ["D 0", "D 1", "B 0", "B 1", "B 2"], "undo in the owning library")

        // On the boundary between default and jazz (empty): the end of default.
        let boundary = try libraries.add(view: id, input: input("At 2"), at: 2)
        #expect(boundary.library == .default && boundary.index == 2 && boundary.libraryIndex == 2)
        let inside = try libraries.add(view: id, input: input("At 4"), at: 4)
        #expect(inside.library == ViewFixture.blues && inside.index == 4 && inside.libraryIndex == 1)
        let appended = try libraries.add(view: id, input: input("Last"), at: 99)
        #expect(appended.library == ViewFixture.blues && appended.index == 7)
        let noIndex = try libraries.add(view: id, input: input("Also last"))
        #expect(noIndex.index == 8)
        #expect(try titles() == ["D 0", "D 1", "At 2", "B 0", "At 4", "B 1", "B 2", "Last", "Also last"])
        #expect(libraryError { _ = try libraries.add(view: id, input: input("No"), at: -1) }?.code == "index-out-of-range")
        _ = try libraries.defaultLibrary.undo()
        #expect(try titles().contains("At 2") == false, "the add is undone in its library")

        // Pages of the view carry the view index and the library.
        let page = try libraries.page(view: id, PageRequest(limit: 4))
        #expect(page.items.map(\.index) == [0, 1, 2, 3])
        #expect(page.items.map(\.library) == [.default, .default, ViewFixture.blues, ViewFixture.blues])

        // No index goes to the end of the last source, even when it is empty.
        let lastEmpty = ViewID(rawValue: "last-empty")
        _ = try libraries.createView(id: lastEmpty, sources: [.default, ViewFixture.jazz])
        let intoJazz = try libraries.add(view: lastEmpty, input: input("Into jazz"))
        #expect(intoJazz.library == ViewFixture.jazz && intoJazz.libraryIndex == 0 && intoJazz.index == 2)
    }
}

extension FacadeRules {
    static let viewRules: [ContractCheck] = [
        ContractCheck("definitionsAreValidatedVersionedAndListed") { try ViewRules(factory: $0).definitionsAreValidatedVersionedAndListed() },
        ContractCheck("aViewsVersionFollowsItsSourcesAndRevision") { try ViewRules(factory: $0).aViewsVersionFollowsItsSourcesAndRevision() },
        ContractCheck("indexAddressingActsInTheOwningLibrary") { try ViewRules(factory: $0).indexAddressingActsInTheOwningLibrary() },
    ]
}
