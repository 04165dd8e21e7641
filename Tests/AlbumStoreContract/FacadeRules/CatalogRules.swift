import Foundation
import Testing
import Library

/// The library catalog through `Libraries`: create, list, rename, delete and its refusals.
struct CatalogRules {
    let factory: AlbumStoreFactory
    let jazz = LibraryID(rawValue: "jazz")
    let rock = LibraryID(rawValue: "rock")

    func createAndList() throws {
        // Given a store with only default
        let fixture = try RegistryFixture(factory)
        // When two libraries are created, one without a name
        let created = try fixture.libraries.create(id: "rock")
        #expect(created == LibraryRecord(id: rock, name: "rock", albumCount: 0, version: 0))
        _ = try fixture.libraries.create(id: "jazz", name: "  Jazz  ")
        // Then the list is ordered by id, names trimmed, counts and versions right
        try fixture.add("A", "B", to: .default)
        #expect(try fixture.libraries.list() == [
            LibraryRecord(id: .default, name: "default", albumCount: 2, version: 2),
            LibraryRecord(id: jazz, name: "Jazz", albumCount: 0, version: 0),
            LibraryRecord(id: rock, name: "rock", albumCount: 0, version: 0),
        ])
        #expect(try fixture.libraries.record(jazz).name == "Jazz")
        #expect(try fixture.facade(jazz).count() == 0)
        #expect(libraryError { _ = try fixture.libraries.record(LibraryID(rawValue: "blues")) } == .libraryNotFound(LibraryID(rawValue: "blues")))
    }

    func createRefusals() throws {
        let fixture = try RegistryFixture(factory, libraries: ["jazz"])
        // Every field problem at once
        #expect(fieldErrors { _ = try fixture.libraries.create(id: "Jazz!", name: "   ") }.map(\.field) == ["id", "name"])
        #expect(fieldErrors { _ = try fixture.libraries.create(id: String(repeating: "a", count: 41)) }.map(\.field) == ["id"])
        // A taken id, default included, is a conflict that says what to do
        let taken = libraryError { _ = try fixture.libraries.create(id: "jazz", name: "Other") }
        #expect(taken == .conflict(
            "a library with id \"jazz\" already exists; choose another id, or rename that one with PATCH /libraries/jazz"))
        guard case .conflict? = libraryError({ _ = try fixture.libraries.create(id: "default") }) else {
            Issue.record("creating default again must be a conflict")
            return
        }
        #expect(try fixture.libraries.record(jazz).name == "jazz")
    }

    func rename() throws {
        let fixture = try RegistryFixture(factory, libraries: ["jazz"])
        #expect(try fixture.libraries.rename(jazz, name: " Smooth Jazz ") == LibraryRecord(
            id: jazz, name: "Smooth Jazz", albumCount: 0, version: 0))
        #expect(try fixture.libraries.rename(.default, name: "Main").name == "Main")
        #expect(fieldErrors { _ = try fixture.libraries.rename(jazz, name: "") }.map(\.field) == ["name"])
        #expect(libraryError { _ = try fixture.libraries.rename(rock, name: "Rock") } == .libraryNotFound(rock))
        // Renaming changes no version
        #expect(try fixture.libraries.record(jazz).version == 0)
    }

    func deleteRefusals() throws {
        // Given jazz with one album
        let fixture = try RegistryFixture(factory, libraries: ["jazz", "rock"])
        try fixture.add("Kind of Blue", to: jazz)
        // Then default is never deleted, jazz not without force, an unknown id is not found
        #expect(libraryError { try fixture.libraries.delete(.default, force: true) } == .conflict(
            "the library default cannot be deleted; delete its albums instead if you want it empty"))
        #expect(libraryError { try fixture.libraries.delete(jazz) } == .conflict(
            "library \"jazz\" holds 1 album; move them elsewhere first, or delete with ?force=true to delete them with the library"))
        #expect(libraryError { try fixture.libraries.delete(LibraryID(rawValue: "blues")) } == .libraryNotFound(LibraryID(rawValue: "blues")))
        // And nothing changed
        #expect(try fixture.titles(jazz) == ["Kind of Blue"])
        // An empty library needs no force
        try fixture.libraries.delete(rock)
        #expect(try fixture.libraries.list().map(\.id) == [.default, jazz])
    }

    func deleteWithForce() throws {
        // Given jazz with albums, undo commands, a state and changes
        let fixture = try RegistryFixture(factory, libraries: ["jazz"])
        let old = try fixture.facade(jazz)
        try fixture.add("Kind of Blue", "Blue Train", to: jazz)
        try old.setState(client: "phone", index: 1)
        let versionBefore = try old.currentVersion()
        // When it is deleted with force
        try fixture.libraries.delete(jazz, force: true)
        // Then it is gone: not listed, no facade, the old facade cannot read or write it
        #expect(try fixture.libraries.list().map(\.id) == [.default])
        #expect(libraryError { _ = try fixture.facade(jazz) } == .libraryNotFound(jazz))
        #expect(libraryError { _ = try old.count() } == .libraryNotFound(jazz))
        #expect(libraryError { _ = try old.add(input("Late")) } == .libraryNotFound(jazz))
        // And created again it is empty, with a new facade whose versions continue
        let revived = try fixture.libraries.create(id: "jazz")
        #expect(fixture.sink(jazz).events.last == .libraryReplaced(version: revived.version),
                "followers of the old jazz are told to reload")
        let renewed = try fixture.facade(jazz)
        #expect(renewed !== old)
        #expect(try renewed.count() == 0 && renewed.undoStatus().depth == 0)
        #expect(try fixture.store.read(jazz) { try $0.states() }.isEmpty)
        #expect(try renewed.currentVersion() >= versionBefore)
        let added = try renewed.add(input("Again"))
        #expect(try renewed.currentVersion() > versionBefore && renewed.version() == renewed.currentVersion())
        #expect(try fixture.titles(jazz) == [added.album.title])
    }

    func deleteUsedByViews() throws {
        // Given two views showing jazz and one that does not
        let fixture = try RegistryFixture(factory, libraries: ["jazz", "rock"])
        let both = ViewDefinition(id: ViewID(rawValue: "both"), name: "Both", sources: [.default, jazz], revision: 3)
        let only = ViewDefinition(id: ViewID(rawValue: "only-jazz"), name: "Only", sources: [jazz])
        let other = ViewDefinition(id: ViewID(rawValue: "other"), name: "Other", sources: [rock, .default])
        for view in [both, only, other] { try fixture.store.saveView(view) }
        // When jazz (empty) is deleted without force, it is refused, naming the views
        #expect(libraryError { try fixture.libraries.delete(jazz) } == .conflict(
            "library \"jazz\" is a source of the views \"both\", \"only-jazz\"; remove it from their sources first, "
                + "or delete with ?force=true to remove it from them"))
        #expect(try fixture.store.views() == [both, only, other])
        // When deleted with force, it leaves those views (revision + 1) and the rest is untouched
        try fixture.libraries.delete(jazz, force: true)
        var expectedBoth = both
        expectedBoth.sources = [.default]
        expectedBoth.revision = 4
        var expectedOnly = only
        expectedOnly.sources = []
        expectedOnly.revision = 2
        #expect(try fixture.store.views() == [expectedBoth, expectedOnly, other])
        #expect(try fixture.libraries.list().map(\.id) == [.default, rock])
    }
}

extension FacadeRules {
    static let catalogRules: [ContractCheck] = [
        ContractCheck("libraries are created empty, listed by id with name, count and version") { try CatalogRules(factory: $0).createAndList() },
        ContractCheck("creating a library reports every bad field and refuses a taken id") { try CatalogRules(factory: $0).createRefusals() },
        ContractCheck("renaming a library trims the name and changes no version") { try CatalogRules(factory: $0).rename() },
        ContractCheck("default and non-empty libraries are not deleted without force") { try CatalogRules(factory: $0).deleteRefusals() },
        ContractCheck("a forced delete removes everything; the id created again continues its versions") { try CatalogRules(factory: $0).deleteWithForce() },
        ContractCheck("a library that views show is deleted only with force, which removes it from them") { try CatalogRules(factory: $0).deleteUsedByViews() },
    ]
}
