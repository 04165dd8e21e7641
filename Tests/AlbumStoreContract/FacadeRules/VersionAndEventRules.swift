@testable import BlueLibraryAPI
import Testing
import Library

struct VersionAndEventRules {
    let factory: AlbumStoreFactory

    func versionBumps() throws {
        let fixture = try FacadeFixture(factory)
        #expect(try fixture.facade.version() == 0)
        let a = try fixture.facade.add(input("A")).album
        #expect(try fixture.facade.version() == 1)
        _ = try fixture.facade.add(input("B"))
        #expect(try fixture.facade.version() == 2)
        _ = try fixture.facade.update(id: a.id, patch: AlbumPatch(year: .set(2000)))
        #expect(try fixture.facade.version() == 3)
        _ = try fixture.facade.move(id: a.id, to: 1)
        #expect(try fixture.facade.version() == 4)
        try fixture.facade.delete(id: a.id)
        #expect(try fixture.facade.version() == 5)
        try fixture.facade.undo()
        #expect(try fixture.facade.version() == 6)
        // No-ops: same-index move, patch that changes nothing, state, reads
        _ = try fixture.facade.move(id: a.id, to: 1)
        _ = try fixture.facade.update(id: a.id, patch: AlbumPatch(year: .set(2000)))
        try fixture.facade.setState(index: 0)
        _ = try fixture.facade.page(PageRequest())
        #expect(try fixture.facade.version() == 6)
        #expect(try fixture.facade.undoStatus().depth == 4)
    }

    func eventsAfterCommit() throws {
        let fixture = try FacadeFixture(factory)
        let a = try fixture.facade.add(input("A"), client: "phone").album
        try fixture.facade.delete(id: a.id)
        #expect(fixture.sink.events == [
            .albumAdded(id: a.id, index: 0, version: 1),
            .stateChanged(client: "phone", index: 0, albumID: a.id, version: 1),
            .albumDeleted(id: a.id, index: 0, version: 2),
        ])
        #expect(fixture.sink.events.map(\.name) == ["album.added", "state.changed", "album.deleted"])
    }
}

extension FacadeRules {
    static let versionAndEventRules: [ContractCheck] = [
        ContractCheck("every mutation bumps the version exactly once; no-ops and reads do not") { try VersionAndEventRules(factory: $0).versionBumps() },
        ContractCheck("events are published after commit, with the new version") { try VersionAndEventRules(factory: $0).eventsAfterCommit() },
    ]
}
