import Foundation
import Library
import SQLite

/// The settings document, in the same database (migration v5).
extension SQLiteAlbumStore: SettingsStore {
    public func loadSettings() throws -> [UInt8]? {
        try database.read { db in
            try db.firstRow(SQL.settingsDocument) { row in Array(try row.string(0).utf8) }
        }
    }

    public func saveSettings(_ json: [UInt8]) throws {
        let text = String(decoding: json, as: UTF8.self)
        try database.write { db in
            try db.run(SQL.saveSettingsDocument, [.text(text), .integer(Milliseconds.from(Date()))])
        }
    }

    public func updateSettings(_ body: ([UInt8]?) throws -> [UInt8]?) throws {
        try database.write { db in
            let stored = try db.firstRow(SQL.settingsDocument) { row in Array(try row.string(0).utf8) }
            guard let next = try body(stored) else { return }
            try db.run(SQL.saveSettingsDocument, [.text(String(decoding: next, as: UTF8.self)), .integer(Milliseconds.from(Date()))])
        }
    }

    /// A watch on commits made by any other connection (another process, or this store's own
    /// writer): for a poller that keeps in-memory copies of stored state fresh.
    public func makeChangeWatch() throws -> DatabaseChangeWatch {
        try DatabaseChangeWatch(path: path)
    }
}
