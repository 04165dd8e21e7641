import Foundation
import SQLite
import ServerRecords

/// Server secrets kept in the database (migration v6): ServerRecords' `SecretStore`.
extension SQLiteAlbumStore: SecretStore {
    /// The secret called `name`: the stored one, or else `candidate`, stored now. Whoever
    /// stores first wins, so every process opening this database gets the same value.
    public func secret(named name: String, orStore candidate: [UInt8]) throws -> [UInt8] {
        try database.write { db in
            try db.run(SQL.insertSecret, [.text(name), .blob(candidate), .integer(Milliseconds.from(Date()))])
            guard let value = try db.firstRow(SQL.secret, [.text(name)], { try $0.blob(0) }) else {
                throw StorageError(.corrupt, "the secret \(name) vanished while it was stored")
            }
            return value
        }
    }
}
