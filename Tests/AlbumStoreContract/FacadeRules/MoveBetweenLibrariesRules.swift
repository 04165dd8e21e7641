import Foundation
import Library
import Synchronization
import Testing

/// Moves between libraries (`Libraries.move`), their undo from the source library, and the
/// rule that album ids are unique across libraries (archive import, undo).
struct MoveBetweenLibrariesRules {
    let factory: AlbumStoreFactory
    let jazz = LibraryID(rawValue: "jazz")
    let rock = LibraryID(rawValue: "rock")

    /// A change as the tests compare it (without its recording time).
    struct Seen: Equatable {
        var kind: LibraryChange.Kind
        var id: AlbumID?
        var index: Int?
        var peer: LibraryID?
    }

    func changes(_ fixture: RegistryFixture, _ library: LibraryID, since: Int64) throws -> [Seen] {
        try fixture.facade(library).changes(since: since, limit: 100).changes.map {
            Seen(kind: $0.kind, id: $0.id, index: $0.index, peer: $0.peer)
        }
    }

    func move() throws {
        // Given A, B, C in default and X in jazz, both facades' memos read
        let fixture = try RegistryFixture(factory, libraries: ["jazz"])
        let abc = try fixture.add("A", "B", "C", to: .default)
        try fixture.add("X", to: jazz)
        let source = try fixture.facade(.default)
        let target = try fixture.facade(jazz)
        #expect(try source.currentVersion() == 3 && target.currentVersion() == 1)
        let (sourceEvents, targetEvents) = (fixture.sink(.default).events.count, fixture.sink(jazz).events.count)
        // When B moves to the start of jazz
        let moved = try fixture.libraries.move(abc[1].id, from: .default, to: jazz, index: 0)
        // Then it is there with its fields and timestamps, and gone from default
        #expect(moved == IndexedAlbum(album: abc[1], index: 0))
        #expect(try target.album(id: abc[1].id) == moved)
        #expect(try fixture.titles(.default) == ["A", "C"])
        #expect(try fixture.titles(jazz) == ["B", "X"])
        #expect(libraryError { _ = try source.album(id: abc[1].id) } == .notFound(abc[1].id))
        // And each version went up once, memos included
        #expect(try fixture.storedVersion(.default) == 4 && fixture.storedVersion(jazz) == 2)
        #expect(try source.currentVersion() == 4 && target.currentVersion() == 2)
        // And each library published its event, and its feed says where the album went
        #expect(Array(fixture.sink(.default).events.dropFirst(sourceEvents)) == [
            .albumMovedOut(id: abc[1].id, index: 1, to: jazz, version: 4)])
        #expect(Array(fixture.sink(jazz).events.dropFirst(targetEvents)) == [
            .albumMovedIn(id: abc[1].id, index: 0, from: .default, version: 2)])
        #expect(try changes(fixture, .default, since: 3) == [Seen(kind: .deleted, id: abc[1].id, index: 1, peer: jazz)])
        #expect(try changes(fixture, jazz, since: 1) == [Seen(kind: .added, id: abc[1].id, index: 0, peer: .default)])
        // And only the source's stack got an undo command
        #expect(try source.undoStatus() == UndoStatus(depth: 4, next: "move 'B' back from library jazz to index 1"))
        #expect(try target.undoStatus() == UndoStatus(depth: 1, next: "remove the added album 'X'"))
        #expect(try fixture.libraries.list().map(\.albumCount) == [2, 2])
    }

    func undoFromSource() throws {
        // Given B moved from default to jazz
        let fixture = try RegistryFixture(factory, libraries: ["jazz"])
        let abc = try fixture.add("A", "B", "C", to: .default)
        try fixture.add("X", to: jazz)
        _ = try fixture.libraries.move(abc[1].id, from: .default, to: jazz, index: nil)
        let source = try fixture.facade(.default)
        let target = try fixture.facade(jazz)
        #expect(try target.currentVersion() == 2)
        let (sourceEvents, targetEvents) = (fixture.sink(.default).events.count, fixture.sink(jazz).events.count)
        // When default undoes it
        let result = try source.undo(client: "phone")
        // Then B is back at its index with its fields, and jazz is as before
        let command = UndoCommand.moveBack(id: abc[1].id, title: "B", library: jazz, index: 1)
        #expect(result == UndoResult(command: command, album: IndexedAlbum(album: abc[1], index: 1), version: 5))
        #expect(try fixture.titles(.default) == ["A", "B", "C"])
        #expect(try fixture.titles(jazz) == ["X"])
        #expect(try source.state(client: "phone").albumID == abc[1].id)
        // And both versions went up once, memos included, with events and changes in both
        #expect(try source.currentVersion() == 5 && target.currentVersion() == 3)
        #expect(try fixture.storedVersion(.default) == 5 && fixture.storedVersion(jazz) == 3)
        #expect(Array(fixture.sink(jazz).events.dropFirst(targetEvents)) == [
            .albumMovedOut(id: abc[1].id, index: 1, to: .default, version: 3)])
        #expect(Array(fixture.sink(.default).events.dropFirst(sourceEvents)) == [
            .albumMovedIn(id: abc[1].id, index: 1, from: jazz, version: 5),
            .stateChanged(client: "phone", index: 1, albumID: abc[1].id, version: 5),
        ])
        #expect(try changes(fixture, .default, since: 4) == [Seen(kind: .added, id: abc[1].id, index: 1, peer: jazz)])
        #expect(try changes(fixture, jazz, since: 2) == [Seen(kind: .deleted, id: abc[1].id, index: 1, peer: .default)])
        // And undo is not itself undoable; the older commands follow
        #expect(try source.undoStatus().next == "remove the added album 'C'")
        #expect(try target.undoStatus().depth == 1)
    }

    func undoAfterRestart() throws {
        // Given a move, then a new registry over the same store (a restart) with jazz's memo read
        let fixture = try RegistryFixture(factory, libraries: ["jazz"])
        let added = try fixture.add("A", "B", to: .default)
        _ = try fixture.libraries.move(added[0].id, from: .default, to: jazz, index: nil)
        let restarted = fixture.restarted()
        let target = try restarted.facade(jazz)
        #expect(try target.currentVersion() == 1)
        // When default undoes the move there
        try restarted.defaultLibrary.undo()
        // Then jazz's memo in that registry knows the new version
        #expect(try target.currentVersion() == 2)
        #expect(try fixture.titles(.default) == ["A", "B"] && fixture.titles(jazz).isEmpty)
    }

    func indexRules() throws {
        let fixture = try RegistryFixture(factory, libraries: ["jazz"])
        let added = try fixture.add("A", "B", "C", "D", to: .default)
        try fixture.add("X", "Y", to: jazz)
        // nil and past the end append
        #expect(try fixture.libraries.move(added[0].id, from: .default, to: jazz, index: nil).index == 2)
        #expect(try fixture.libraries.move(added[1].id, from: .default, to: jazz, index: 99).index == 3)
        #expect(try fixture.libraries.move(added[2].id, from: .default, to: jazz, index: 1).index == 1)
        #expect(try fixture.titles(jazz) == ["X", "C", "Y", "A", "B"])
        // A negative index, an album not in the source, an unknown library: nothing changes
        let versions = (try fixture.storedVersion(.default), try fixture.storedVersion(jazz))
        #expect(libraryError { _ = try fixture.libraries.move(added[3].id, from: .default, to: jazz, index: -1) }
            == .indexOutOfRange(index: -1, count: 5))
        #expect(libraryError { _ = try fixture.libraries.move(added[0].id, from: .default, to: jazz, index: 0) }
            == .notFound(added[0].id))
        #expect(libraryError { _ = try fixture.libraries.move(added[3].id, from: .default, to: rock, index: 0) }
            == .libraryNotFound(rock))
        #expect(libraryError { _ = try fixture.libraries.move(added[3].id, from: rock, to: jazz, index: 0) }
            == .libraryNotFound(rock))
        #expect(try (fixture.storedVersion(.default), fixture.storedVersion(jazz)) == versions)
        #expect(try fixture.titles(.default) == ["D"])
        #expect(fixture.sink(.default).events.count == 4 * 2 + 3, "four adds (with their state events), three moves out")
    }

    func sameLibrary() throws {
        let fixture = try RegistryFixture(factory, libraries: ["jazz"])
        let added = try fixture.add("A", "B", "C", to: jazz)
        // The same library is today's move: an index must be a position, nil is the last one
        #expect(try fixture.libraries.move(added[0].id, from: jazz, to: jazz, index: 1).index == 1)
        #expect(try fixture.libraries.move(added[0].id, from: jazz, to: jazz, index: nil).index == 2)
        #expect(try fixture.titles(jazz) == ["B", "C", "A"])
        #expect(libraryError { _ = try fixture.libraries.move(added[0].id, from: jazz, to: jazz, index: 3) }
            == .indexOutOfRange(index: 3, count: 3))
        #expect(try fixture.facade(jazz).undoStatus().next == "move 'A' back to index 1")
    }

    func undoThatNoLongerFits() throws {
        // Given A moved to jazz and deleted there, B moved to rock and rock deleted
        let fixture = try RegistryFixture(factory, libraries: ["jazz", "rock"])
        let added = try fixture.add("A", "B", "C", to: .default)
        _ = try fixture.libraries.move(added[0].id, from: .default, to: jazz, index: nil)
        _ = try fixture.libraries.move(added[1].id, from: .default, to: rock, index: nil)
        try fixture.facade(rock).delete(id: added[1].id)
        let source = try fixture.facade(.default)
        // When default undoes the move to rock: the album is gone from rock, so it is dropped
        let version = try source.version()
        #expect(libraryError { try source.undo() } == .undoConflict(
            "'move 'B' back from library rock to index 0' no longer matches the library, so it was dropped"))
        #expect(try source.version() == version)
        // And the move to jazz, with jazz deleted meanwhile, is dropped too
        try fixture.libraries.delete(jazz, force: true)
        #expect(libraryError { try source.undo() } == .undoConflict(
            "'move 'A' back from library jazz to index 0' no longer matches the library, so it was dropped"))
        // And a move back that names its own library (no move writes one) is dropped, not a trap
        try fixture.store.write(.default) { writer in
            try writer.pushUndo(.moveBack(id: added[2].id, title: "C", library: .default, index: 0), limit: 100)
        }
        #expect(libraryError { try source.undo() }?.code == "undo-conflict")
        // And the older commands still work
        #expect(try source.undoStatus().next == "remove the added album 'C'")
        try source.undo()
        #expect(try fixture.titles(.default).isEmpty)
        #expect(try source.version() == version + 1)
    }

    func undoClampsIndex() throws {
        // Given D (the last of four) moved to jazz, then A and B gone from default without
        // leaving undo commands (written straight to the store)
        let fixture = try RegistryFixture(factory, libraries: ["jazz"])
        let added = try fixture.add("A", "B", "C", "D", to: .default)
        _ = try fixture.libraries.move(added[3].id, from: .default, to: jazz, index: nil)
        try fixture.store.write(.default) { writer in
            for album in added[0...1] { try writer.delete(id: album.id) }
        }
        // When default undoes the move, D's old index 3 is past the end: it lands at the end
        let result = try fixture.facade(.default).undo()
        #expect(result.album == IndexedAlbum(album: added[3], index: 1))
        #expect(try fixture.titles(.default) == ["C", "D"] && fixture.titles(jazz).isEmpty)
    }

    func undoOnStandaloneFacade() throws {
        // Given a move made through a registry, undone through a facade made on its own
        let fixture = try RegistryFixture(factory, libraries: ["jazz"])
        let added = try fixture.add("A", to: .default)
        _ = try fixture.libraries.move(added[0].id, from: .default, to: jazz, index: nil)
        let clock = fixture.clock
        let standalone = LibraryFacade(store: fixture.store, clock: { clock.now }, ids: .random(clock: { clock.now }))
        // Then the undo still writes both libraries
        try standalone.undo()
        #expect(try fixture.titles(.default) == ["A"] && fixture.titles(jazz).isEmpty)
        #expect(try fixture.storedVersion(jazz) == 2)
    }

    func concurrent() throws {
        // Given 12 albums in default and 12 in jazz, memos read
        let fixture = try RegistryFixture(factory, libraries: ["jazz"])
        let albums = try (0..<12).flatMap { n in
            [try fixture.add("D\(n)", to: .default)[0], try fixture.add("J\(n)", to: jazz)[0]]
        }
        let libraries = [LibraryID.default, jazz]
        for library in libraries { _ = try fixture.facade(library).currentVersion() }
        // When four threads move albums both ways and undo, at once
        let unexpected = Mutex<[String]>([])
        let done = Mutex<(moves: Int, undos: Int)>((0, 0))
        let registry = fixture.libraries
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for step in 0..<25 {
                let album = albums[(worker * 7 + step * 5) % albums.count]
                let (from, to) = (libraries[(worker + step) % 2], libraries[(worker + step + 1) % 2])
                do {
                    if step % 5 == 4 {
                        try registry.facade(from).undo()
                        done.withLock { $0.undos += 1 }
                    } else {
                        _ = try registry.move(album.id, from: from, to: to, index: step % 3 == 0 ? nil : step % 4)
                        done.withLock { $0.moves += 1 }
                    }
                } catch LibraryError.notFound, LibraryError.undoConflict, LibraryError.undoStackEmpty {
                    // Another thread moved that album first, or undid what this undo meant.
                } catch {
                    unexpected.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(unexpected.withLock { $0 }.isEmpty)
        let (moves, undos) = done.withLock { $0 }
        #expect(moves >= 20 && undos >= 4, "\(moves) moves and \(undos) undos succeeded")
        // Then every album is in exactly one library, with its fields
        let held = try libraries.flatMap { try fixture.facade($0).page(PageRequest(limit: 500)).items.map(\.album) }
        #expect(held.count == albums.count)
        #expect(Set(held.map(\.id)) == Set(albums.map(\.id)))
        #expect(held.sorted { $0.id.rawValue < $1.id.rawValue } == albums.sorted { $0.id.rawValue < $1.id.rawValue })
        // And each memo knows its library's version, and each feed is consecutive up to it
        for library in libraries {
            let version = try fixture.storedVersion(library)
            #expect(try fixture.facade(library).currentVersion() == version)
            let feed = try fixture.facade(library).changes(since: 0, limit: 1000).changes.map(\.version)
            #expect(feed == Array(1...version))
        }
    }

    func codable() throws {
        let album = AlbumID("01HZY8Q6V9T3X2K7M4N5P6R7S8")!
        let command = UndoCommand.moveBack(id: album, title: "B", library: jazz, index: 3)
        let data = try JSONEncoder().encode(command)
        #expect(try JSONDecoder().decode(UndoCommand.self, from: data) == command)
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        #expect(object?["kind"] as? String == "moveBack" && object?["library"] as? String == "jazz")
        #expect(object?["index"] as? Int == 3 && object?["id"] as? String == album.rawValue && object?["title"] as? String == "B")
    }

    func importRefusesIDsOfOtherLibraries() throws {
        // Given jazz holding X and Y, exported, and default holding A
        let fixture = try RegistryFixture(factory, libraries: ["jazz"])
        let xy = try fixture.add("X", "Y", to: jazz)
        try fixture.add("A", to: .default)
        var archive: [UInt8] = []
        try fixture.facade(jazz).exportArchive { archive += $0 }
        let version = try fixture.storedVersion(.default)
        // When default imports jazz's archive, it is refused, naming the first id jazz holds
        let error = libraryError { try fixture.facade(.default).importArchive(archive) }
        #expect(error == .conflict(
            "album \(xy[0].id) of the archive is in library \"jazz\"; album ids are unique across libraries, "
                + "so move or delete it there first (or remove it from the archive); nothing was changed"))
        // And nothing changed
        #expect(try fixture.titles(.default) == ["A"] && fixture.storedVersion(.default) == version)
        // And a library may import its own albums again (the ids it holds are its own)
        #expect(try fixture.facade(jazz).importArchive(archive).albumCount == 2)
        #expect(try fixture.titles(jazz) == ["X", "Y"])
        // And once jazz no longer holds them, default may
        try fixture.libraries.delete(jazz, force: true)
        #expect(try fixture.facade(.default).importArchive(archive).albumCount == 2)
    }

    func reinsertBlockedByIDElsewhere() throws {
        // Given A deleted from default, then imported into jazz from an old archive
        let fixture = try RegistryFixture(factory, libraries: ["jazz"])
        try fixture.add("A", to: .default)
        var archive: [UInt8] = []
        try fixture.facade(.default).exportArchive { archive += $0 }
        try fixture.facade(.default).delete(at: 0)
        try fixture.facade(jazz).importArchive(archive)
        // When default undoes the delete, the id is taken: the command is dropped, not a storage error
        #expect(libraryError { try fixture.facade(.default).undo() } == .undoConflict(
            "'re-insert 'A' at index 0' no longer matches the library, so it was dropped"))
        #expect(try fixture.titles(.default).isEmpty && fixture.titles(jazz) == ["A"])
    }
}

extension FacadeRules {
    static let moveBetweenLibrariesRules: [ContractCheck] = [
        ContractCheck("a move between libraries bumps both versions once, with events and changes in both") { try MoveBetweenLibrariesRules(factory: $0).move() },
        ContractCheck("the source library's undo moves the album back, in both libraries") { try MoveBetweenLibrariesRules(factory: $0).undoFromSource() },
        ContractCheck("the undo of a move works after a restart and keeps the other memo right") { try MoveBetweenLibrariesRules(factory: $0).undoAfterRestart() },
        ContractCheck("a move between libraries appends for nil or past the end and changes nothing on errors") { try MoveBetweenLibrariesRules(factory: $0).indexRules() },
        ContractCheck("a move within one library through the registry is today's move") { try MoveBetweenLibrariesRules(factory: $0).sameLibrary() },
        ContractCheck("the undo of a move is dropped when the album or its library is gone") { try MoveBetweenLibrariesRules(factory: $0).undoThatNoLongerFits() },
        ContractCheck("the undo of a move puts the album back at its index, clamped to the end") { try MoveBetweenLibrariesRules(factory: $0).undoClampsIndex() },
        ContractCheck("a facade made on its own still undoes a move in both libraries") { try MoveBetweenLibrariesRules(factory: $0).undoOnStandaloneFacade() },
        ContractCheck("concurrent moves both ways and undos keep each album in one library, memos and feeds right") { try MoveBetweenLibrariesRules(factory: $0).concurrent() },
        ContractCheck("moveBack survives a JSON round trip as {kind: moveBack, id, title, library, index}") { try MoveBetweenLibrariesRules(factory: $0).codable() },
        ContractCheck("archive import refuses album ids another library holds, changing nothing") { try MoveBetweenLibrariesRules(factory: $0).importRefusesIDsOfOtherLibraries() },
        ContractCheck("undoing a delete whose id another library now holds is dropped") { try MoveBetweenLibrariesRules(factory: $0).reinsertBlockedByIDElsewhere() },
    ]
}
