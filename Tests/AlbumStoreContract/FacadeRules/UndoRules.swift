@testable import BlueLibraryAPI
import Foundation
import Testing
import Library

struct UndoRules {
    let factory: AlbumStoreFactory

    func lifo() throws {
        // Given the seed albums and a snapshot of them
        let fixture = try FacadeFixture(factory, seeded: true)
        let original = try fixture.facade.page(PageRequest(limit: 500)).items.map(\.album)
        // When four different mutations happen
        try fixture.facade.delete(at: 0)
        let added = try fixture.facade.add(input("New"), at: 2)
        _ = try fixture.facade.move(id: original[4].id, to: 0)
        _ = try fixture.facade.update(id: original[2].id, patch: AlbumPatch(title: .set("Renamed")))
        #expect(try fixture.facade.undoStatus() == UndoStatus(depth: 4, next: "restore the previous fields of 'Nothing Like The Sun'"))
        // Then undoing walks them back newest first
        #expect(try fixture.facade.undo().command == .restore(album: original[2]))
        #expect(try fixture.titles() == ["American Pie", "It's My Life", "Nothing Like The Sun", "New", "Staring at the Sun"])
        #expect(try fixture.facade.undo().command == .move(id: original[4].id, title: "American Pie", index: 4))
        #expect(try fixture.titles() == ["It's My Life", "Nothing Like The Sun", "New", "Staring at the Sun", "American Pie"])
        #expect(try fixture.facade.undo().command == .remove(id: added.album.id, title: "New"))
        #expect(try fixture.facade.undoStatus().next == "re-insert 'Best of Bowie' at index 0")
        try fixture.facade.undo()
        // And the library is exactly as before, fields and timestamps included
        #expect(try fixture.facade.page(PageRequest(limit: 500)).items.map(\.album) == original)
        #expect(throws: LibraryError.undoStackEmpty) { try fixture.facade.undo() }
        #expect(try fixture.facade.undoStatus() == UndoStatus(depth: 0, next: nil))
    }

    func severalDeletes() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        let before = try fixture.titles()
        try fixture.facade.delete(at: 4)
        try fixture.facade.delete(at: 0)
        try fixture.facade.delete(at: 1)
        for _ in 0..<3 { try fixture.facade.undo() }
        #expect(try fixture.titles() == before)
    }

    func limit() throws {
        // Given a limit of 2
        let fixture = try FacadeFixture(factory, undoLimit: 2)
        try fixture.add("A", "B", "C")
        // Then only the two newest adds can be undone
        #expect(try fixture.facade.undoStatus().depth == 2)
        try fixture.facade.undo()
        try fixture.facade.undo()
        #expect(throws: LibraryError.undoStackEmpty) { try fixture.facade.undo() }
        #expect(try fixture.titles() == ["A"])
    }

    func versionAndNoRedo() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        try fixture.facade.delete(at: 0)
        let result = try fixture.facade.undo()
        #expect(result.version == 3 && result.album?.index == 0)
        #expect(try fixture.facade.undoStatus().depth == 0)
    }

    func conflict() throws {
        // Given a stack whose top command refers to an album that is not there
        let fixture = try FacadeFixture(factory, seeded: true)
        try fixture.facade.delete(at: 0)
        let ghost = AlbumID("01HZY8Q6V9T3X2K7M4N5P6R7S8")!
        try fixture.store.write(.default) { try $0.pushUndo(.remove(id: ghost, title: "Ghost"), limit: 100) }
        let titles = try fixture.titles()
        // When undoing
        let error = libraryError { try fixture.facade.undo() }
        // Then it is a conflict, the command is gone, and the older one still works
        #expect(error == .undoConflict("'remove the added album 'Ghost'' no longer matches the library, so it was dropped"))
        #expect(try fixture.titles() == titles)
        #expect(try fixture.facade.undoStatus().depth == 1)
        try fixture.facade.undo()
        #expect(try fixture.facade.count() == 5)
    }

    func codable() throws {
        let fixture = try FacadeFixture(factory, seeded: true)
        let album = try fixture.facade.album(at: 1).album
        let commands: [UndoCommand] = [
            .reinsert(album: album, index: 1), .remove(id: album.id, title: album.title),
            .move(id: album.id, title: album.title, index: 3), .restore(album: album),
        ]
        for command in commands {
            let data = try JSONEncoder().encode(command)
            #expect(try JSONDecoder().decode(UndoCommand.self, from: data) == command)
        }
        let json = String(decoding: try JSONEncoder().encode(commands[1]), as: UTF8.self)
        #expect(json.contains(#""kind":"remove""#))
    }
}

extension FacadeRules {
    static let undoRules: [ContractCheck] = [
        ContractCheck("undo reverses delete, add, move and update, last first, restoring the exact order") { try UndoRules(factory: $0).lifo() },
        ContractCheck("several deletes are undone in reverse order") { try UndoRules(factory: $0).severalDeletes() },
        ContractCheck("the undo limit drops the oldest commands") { try UndoRules(factory: $0).limit() },
        ContractCheck("undo bumps the version once and is not itself undoable") { try UndoRules(factory: $0).versionAndNoRedo() },
        ContractCheck("a command that no longer fits is dropped and reported, leaving albums alone") { try UndoRules(factory: $0).conflict() },
        ContractCheck("undo commands survive a JSON round trip (the store keeps them as JSON)") { try UndoRules(factory: $0).codable() },
    ]
}
