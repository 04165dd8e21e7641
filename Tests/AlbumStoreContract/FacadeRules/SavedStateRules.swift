import Testing
import Library

struct SavedStateRules {
    let factory: AlbumStoreFactory

    func defaultState() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        let state = try fixture.facade.state(client: "phone")
        #expect(state.currentAlbumIndex == 0 && state.updatedAt == nil)
        #expect(state.albumID == (try fixture.facade.album(at: 0).album.id))
    }

    func setByIndex() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        let state = try fixture.facade.setState(client: "phone", index: 3)
        #expect(state.albumID == (try fixture.facade.album(at: 3).album.id))
        #expect(try fixture.facade.state(client: "phone") == state)
        #expect(throws: LibraryError.indexOutOfRange(index: 5, count: 5)) { try fixture.facade.setState(client: "phone", index: 5) }
        #expect(fieldErrors { _ = try fixture.facade.setState(client: "bad name!", index: 0) }.map(\.field) == ["client"])
    }

    func clampedWhenShrinking() throws {
        // Given a state on the last album
        let fixture = try FacadeFixture(factory, seeded: true)
        try fixture.facade.setState(index: 4)
        // When the last two albums are deleted
        try fixture.facade.delete(at: 4)
        try fixture.facade.delete(at: 3)
        // Then the state points at the new last album, as reloadScroller clamped
        let state = try fixture.facade.state()
        #expect(state.currentAlbumIndex == 2)
        #expect(state.albumID == (try fixture.facade.album(at: 2).album.id))
    }

    func emptyLibrary() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        try fixture.facade.setState(index: 2)
        for _ in 0..<5 { try fixture.facade.delete(at: 0) }
        let state = try fixture.facade.state()
        #expect(state.currentAlbumIndex == 0 && state.albumID == nil)
        #expect(try fixture.facade.setState(index: 0).albumID == nil)
    }

    func followsAlbum() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        let sting = try fixture.facade.setState(client: "tv", index: 2)
        _ = try fixture.facade.add(input("Top"), at: 0, client: "phone")
        let state = try fixture.facade.state(client: "tv")
        #expect(state.currentAlbumIndex == 3 && state.albumID == sting.albumID)
    }

    func addMovesState() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        try fixture.facade.setState(client: "tv", index: 1)
        let added = try fixture.facade.add(input("New"), at: 3, client: "phone")
        #expect(try fixture.facade.state(client: "phone").albumID == added.album.id)
        #expect(try fixture.facade.state(client: "phone").currentAlbumIndex == 3)
        #expect(try fixture.facade.state(client: "tv").currentAlbumIndex == 1)
    }

    func undoMovesState() throws {
        // Given a client on album 0 who deletes album 3
        let fixture = try FacadeFixture(factory, seeded: true)
        try fixture.facade.setState(client: "phone", index: 0)
        let deleted = try fixture.facade.delete(at: 3)
        // When the client undoes
        try fixture.facade.undo(client: "phone")
        // Then the restored album is current for that client
        let state = try fixture.facade.state(client: "phone")
        #expect(state.currentAlbumIndex == 3 && state.albumID == deleted.album.id)
    }
}

extension FacadeRules {
    static let savedStateRules: [ContractCheck] = [
        ContractCheck("a client that never saved a state starts at index 0") { try SavedStateRules(factory: $0).defaultState() },
        ContractCheck("set by index stores the album it points to; out of range is refused") { try SavedStateRules(factory: $0).setByIndex() },
        ContractCheck("the index is clamped when the list shrinks below it") { try SavedStateRules(factory: $0).clampedWhenShrinking() },
        ContractCheck("an emptied library gives index 0 and no album") { try SavedStateRules(factory: $0).emptyLibrary() },
        ContractCheck("the state follows its album when others are inserted above it") { try SavedStateRules(factory: $0).followsAlbum() },
        ContractCheck("adding at an index moves the acting client's state to the new album only") { try SavedStateRules(factory: $0).addMovesState() },
        ContractCheck("undoing a delete makes the restored album the client's current one") { try SavedStateRules(factory: $0).undoMovesState() },
    ]
}
