import Foundation
import Library
import Postgres

/// The settings document shared by every instance; each change bumps the `settings` signal.
extension PostgresServerRecords: SettingsStore {
    public func loadSettings() throws -> [UInt8]? {
        try pool.withConnection { connection in
            try connection.firstRow(PostgresRecordsSQL.settingsDocument) { row in Array(try row.string(0).utf8) }
        }
    }

    public func saveSettings(_ json: [UInt8]) throws {
        try changing(PostgresSchema.Signal.settings) { connection in
            try Self.store(json, connection)
            return ((), true)
        }
    }

    /// Reads and writes under the `settings` signal's row lock: a change another instance makes
    /// meanwhile waits for this one (and then reads what this one stored), it is never overwritten.
    public func updateSettings(_ body: ([UInt8]?) throws -> [UInt8]?) throws {
        try changing(PostgresSchema.Signal.settings) { connection in
            let stored = try connection.firstRow(PostgresRecordsSQL.settingsDocument) { row in Array(try row.string(0).utf8) }
            guard let next = try body(stored) else { return ((), false) }
            try Self.store(next, connection)
            return ((), true)
        }
    }

    private static func store(_ json: [UInt8], _ connection: PostgresConnection) throws {
        try connection.run(PostgresRecordsSQL.saveSettingsDocument, [
            .text(String(decoding: json, as: UTF8.self)), .integer(Milliseconds.from(Date())),
        ])
    }
}
