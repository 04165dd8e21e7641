import Essentials
import Foundation
import HTTPTestSupport
import Library
import Storage
import TestThreads
import Testing

@Suite("Undo stack and saved states", .ownThreads)
struct UndoAndStateTests {
    static let commands: [UndoCommand] = [
        .reinsert(album: Fixtures.album(1), index: 0),
        .remove(id: Fixtures.id(2), title: "Album 2"),
        .move(id: Fixtures.id(3), title: "Album 3", index: 7),
        .restore(album: Fixtures.album(4, title: "Before")),
        .remove(id: Fixtures.id(5), title: "Album 5"),
    ]

    @Test func pushPeekPopInStackOrder() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory)
        try store.write(.default) { writer throws in
            #expect(try writer.popUndo() == nil)
            #expect(try writer.peekUndo() == nil)
            for command in Self.commands { try writer.pushUndo(command, limit: 100) }
        }
        try store.read(.default) { reader throws in
            #expect(try reader.undoDepth() == 5)
            #expect(try reader.peekUndo() == Self.commands.last)
        }
        try store.write(.default) { writer throws in
            for command in Self.commands.reversed() {
                #expect(try writer.peekUndo() == command)
                #expect(try writer.popUndo() == command)
            }
            #expect(try writer.popUndo() == nil)
            #expect(try writer.undoDepth() == 0)
        }
    }

    @Test func pushDropsTheOldestBeyondTheLimit() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory)
        try store.write(.default) { writer throws in
            for command in Self.commands { try writer.pushUndo(command, limit: 3) }
            #expect(try writer.undoDepth() == 3)
            #expect(try writer.popUndo() == Self.commands[4])
            #expect(try writer.popUndo() == Self.commands[3])
            #expect(try writer.popUndo() == Self.commands[2])
            #expect(try writer.popUndo() == nil)
            // Popping and pushing again keeps the order right.
            try writer.pushUndo(Self.commands[0], limit: 3)
            try writer.pushUndo(Self.commands[1], limit: 3)
            #expect(try writer.popUndo() == Self.commands[1])
            try writer.pushUndo(Self.commands[2], limit: 3)
            #expect(try writer.peekUndo() == Self.commands[2])
            #expect(try writer.undoDepth() == 2)
            // Limit 0 keeps none; a smaller limit trims at the next push.
            try writer.pushUndo(Self.commands[3], limit: 0)
            #expect(try writer.undoDepth() == 0)
            for command in Self.commands { try writer.pushUndo(command, limit: 5) }
            try writer.pushUndo(Self.commands[0], limit: 2)
            #expect(try writer.undoDepth() == 2)
            #expect(try writer.popUndo() == Self.commands[0])
            #expect(try writer.popUndo() == Self.commands[4])
        }
    }

    @Test func clearUndoEmptiesOnlyThisLibrary() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory)
        let other = LibraryID(rawValue: "other")
        _ = try store.createLibrary(other, name: "Other")
        try store.write(.default) { writer throws in
            for command in Self.commands { try writer.pushUndo(command, limit: 10) }
        }
        try store.write(other) { try $0.pushUndo(Self.commands[0], limit: 10) }
        try store.write(.default) { try $0.clearUndo() }
        #expect(try store.read(.default) { try $0.undoDepth() } == 0)
        #expect(try store.read(other) { try $0.peekUndo() } == Self.commands[0])
    }

    @Test func statesAreStoredReplacedListedAndDeleted() throws {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory)
        let phone = SavedState(
            client: "phone", currentAlbumIndex: 3, albumID: Fixtures.id(4),
            updatedAt: Timestamp.date(milliseconds: 1_714_566_896_789))
        let desk = SavedState(client: "desk", currentAlbumIndex: 0, albumID: nil, updatedAt: nil)
        let anna = SavedState(client: "Anna-2.x_y", currentAlbumIndex: -5, albumID: nil, updatedAt: Timestamp.date(milliseconds: -1))
        try store.write(.default) { writer throws in
            try writer.saveState(phone)
            try writer.saveState(desk)
            try writer.saveState(anna)
        }
        try store.read(.default) { reader throws in
            #expect(try reader.state(client: "phone") == phone)
            #expect(try reader.state(client: "desk") == desk)
            #expect(try reader.state(client: "tablet") == nil)
            #expect(try reader.states() == [anna, desk, phone]) // byte order of client names
        }
        var moved = phone
        moved.currentAlbumIndex = 9
        moved.albumID = nil
        moved.updatedAt = nil
        try store.write(.default) { try $0.saveState(moved) }
        #expect(try store.read(.default) { try $0.states() } == [anna, desk, moved])
        try store.write(.default) { try $0.deleteAllStates() }
        #expect(try store.read(.default) { try $0.states() }.isEmpty)
    }
}
