import Foundation
import Library

/// The undo stack of one library (table `undo_commands`), inside one transaction: commands
/// stored as the JSON of `UndoCommand`, newest on top (highest `seq`).
struct UndoStack<DB: SQLSession> {
    let db: DB
    /// The library's row id (a live library: transactions open only on those).
    let library: Int64

    func depth() throws -> Int {
        return try db.value(SQL.undoDepth, [.integer(library)], as: Int.self) ?? 0
    }

    func peek() throws -> UndoCommand? {
        try newest()?.command
    }

    func push(_ command: UndoCommand, limit: Int, library: Int64) throws {
        let json = String(decoding: try JSONEncoder().encode(command), as: UTF8.self)
        try db.runLater(SQL.pushUndo, [.integer(library), .text(json)])
        try db.runLater(SQL.trimUndo, [.integer(library), .integer(Int64(max(0, limit)))])
    }

    func pop(library: Int64) throws -> UndoCommand? {
        guard let (sequence, command) = try newest() else { return nil }
        try db.run(SQL.deleteUndo, [.integer(library), .integer(sequence)])
        return command
    }

    func clear(library: Int64) throws {
        try db.run(SQL.clearUndo, [.integer(library)])
    }

    private func newest() throws -> (sequence: Int64, command: UndoCommand)? {
        guard let (sequence, json) = try db.firstRow(SQL.peekUndo, [.integer(library)], {
            (try $0.int64(0), try $0.string(1))
        }) else { return nil }
        do {
            return (sequence, try JSONDecoder().decode(UndoCommand.self, from: Data(json.utf8)))
        } catch {
            throw StorageError(.corrupt, "undo command \(sequence) cannot be decoded: \(error)")
        }
    }
}
