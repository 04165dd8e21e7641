import BlueLibraryAPI
import Essentials
import Foundation
import Library
import ServerRecords

/// `bluelibrary keys create --data-dir DIR | --database-url URL`: makes a key and stores it
/// straight in the database, with no server (the way to the first key of a server nobody can
/// reach yet, or back in after the last admin key is lost). The fields follow `POST /keys`'s
/// rules (``KeyRequest``); a running server on the same database learns the key within
/// `accessPollInterval`, as it learns a token from `bluelibrary token set`.
public enum KeySetting {
    /// A key just stored: the whole key (shown once, never stored) and what became of the lock.
    public struct Created: Sendable {
        public let id: String
        /// The whole key to send as `Authorization: Bearer`.
        public let secret: String
        public let name: String
        public let scopes: [String]
        public let libraries: [String]?
        public let expiresAt: Date?
        public let createdAt: Date
        /// Whether the lock was on before.
        public let lockWasOn: Bool
        /// Whether the lock is on now: an admin key for every library turns it on, as
        /// `bluelibrary token set` does; any other key leaves it as it was.
        public let lockIsOn: Bool
    }

    /// Stores a new key in the SQLite database of `dataDirectory`, or in the PostgreSQL
    /// database `databaseURL` names. `scopes` are `read`, `write`, `admin`; `libraries` nil
    /// for every library; `expiresAt` nil for never. Errors say what to fix (the field rules
    /// of `POST /keys`) or why the database could not be used.
    public static func create(
        name: String, scopes: [String], libraries: [String]?, expiresAt: Date?,
        dataDirectory: String, databaseURL: String? = nil, databasePassword: String? = nil, now: Date = Date()
    ) throws(ConfigurationError) -> Created {
        let input = try validated(name: name, scopes: scopes, libraries: libraries, expiresAt: expiresAt, now: now)
        let backend = try TokenSetting.openBackend(dataDirectory: dataDirectory, databaseURL: databaseURL, databasePassword: databasePassword)
        let secret: KeySecret
        do {
            secret = try KeySecret.make()
        } catch {
            throw ConfigurationError("cannot make a key: the system's random source failed: \(error)")
        }
        let key = AccessKey(
            id: secret.id, name: input.name ?? secret.id, scopes: input.scopes ?? [], libraries: input.libraries ?? nil,
            expiresAt: input.expiresAt ?? nil, createdAt: now, secret: secret.hash)
        let lockWasOn: Bool, lockIsOn: Bool
        do {
            try backend.records.saveAccessKey(key)
            let settings = try SettingsService(store: backend.records)
            lockWasOn = settings.current.access.passcodeEnabled
            if !lockWasOn && key.allows(.admin) && key.libraries == nil {
                try settings.modify { $0.access.passcodeEnabled = true }
            }
            lockIsOn = settings.current.access.passcodeEnabled
        } catch {
            throw ConfigurationError("cannot store the key in \(backend.location): \(error)")
        }
        return Created(
            id: key.id, secret: secret.text, name: key.name, scopes: key.scopes.map(\.rawValue), libraries: key.libraries,
            expiresAt: key.expiresAt, createdAt: key.createdAt, lockWasOn: lockWasOn, lockIsOn: lockIsOn)
    }

    /// What is wrong with these fields by `POST /keys`'s rules (nil: nothing); ``create(name:scopes:libraries:expiresAt:dataDirectory:databaseURL:databasePassword:now:)``
    /// checks them too, this tells a usage mistake from a database that fails.
    public static func problem(name: String, scopes: [String], libraries: [String]?, expiresAt: Date?, now: Date = Date()) -> String? {
        do {
            _ = try validated(name: name, scopes: scopes, libraries: libraries, expiresAt: expiresAt, now: now)
            return nil
        } catch {
            return error.message
        }
    }

    /// The input checked by `POST /keys`'s own rules (the same body, decoded the same way).
    private static func validated(name: String, scopes: [String], libraries: [String]?, expiresAt: Date?, now: Date)
        throws(ConfigurationError) -> KeyRequest
    {
        var body: [String: Any] = ["name": name, "scopes": scopes]
        if let libraries { body["libraries"] = libraries }
        if let expiresAt { body["expiresAt"] = Timestamp.format(expiresAt) }
        let bytes: [UInt8]
        do {
            bytes = Array(try JSONSerialization.data(withJSONObject: body))
        } catch {
            throw ConfigurationError("cannot make the key's fields into JSON: \(error)")
        }
        do {
            return try KeyRequest.decodeCreation(json: bytes, now: now)
        } catch {
            if case let .invalid(failure) = error {
                throw ConfigurationError(failure.errors.map(\.message).joined(separator: "; "))
            }
            throw ConfigurationError(error.description)
        }
    }
}
