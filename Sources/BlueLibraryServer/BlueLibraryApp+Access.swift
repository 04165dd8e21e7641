import BlueLibraryAPI
import Covers
import Foundation
import HTTPServer
import Library
import ServerRecords
import Storage

/// A token given at start (`BLUELIBRARY_TOKEN`): kept only until its hash is stored, and
/// never printed (descriptions are redacted, so it cannot reach a log by accident).
public struct AccessToken: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    let value: String
    public init(_ value: String) { self.value = value }
    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
}

extension BlueLibraryApp {
    /// The settings (loaded and upgraded), their live effects, the `settings.changed` event,
    /// and the passcode lock's guard; a start-up token replaces the stored hash and turns the
    /// lock on.
    ///
    /// `apply` puts the settings that have live effects outside the facade (paging, covers) in
    /// force: once at start, and after every change before `settings.changed` is published.
    static func openAccess(
        backend: any StoreBackend, libraries: Libraries, events: EventHub, configuration: ServeConfiguration,
        logger: JSONLogger, apply: @escaping @Sendable (_ old: LibrarySettings?, _ new: LibrarySettings) -> Void = { _, _ in }
    ) throws -> (SettingsService, AccessGuard) {
        let store = backend.records
        let settings: SettingsService
        do {
            settings = try SettingsService(store: store)
        } catch {
            throw ConfigurationError("cannot read the settings from \(backend.location): \(error)")
        }
        if let from = settings.upgradedFrom {
            logger.log(.info, "settings upgraded", [("fromSchemaVersion", .int(from)), ("toSchemaVersion", .int(LibrarySettings.currentSchemaVersion))])
        }
        if let token = configuration.token {
            do {
                // The hash stored already verifies this token (a restart, or another instance
                // started with it): kept, so the start clears no lockout and tells no other
                // instance of a token change that is none.
                if try !AccessGuard.storedHash(in: store, verifies: token.value) {
                    try AccessGuard.storeToken(token.value, in: store)
                }
                if !settings.current.access.passcodeEnabled {
                    try settings.modify { $0.access.passcodeEnabled = true }
                }
            } catch {
                throw ConfigurationError("cannot store the BLUELIBRARY_TOKEN hash in \(backend.location): \(error)")
            }
            logger.log(.info, "write protection enabled from BLUELIBRARY_TOKEN (its hash is stored)")
        }
        libraries.setUndoLimit(settings.current.undo.depth)
        apply(nil, settings.current)
        settings.observe { [libraries, events] old, new in
            if old.undo.depth != new.undo.depth { libraries.setUndoLimit(new.undo.depth) }
            apply(old, new)
            events.publish(name: "settings.changed", json: SettingsRoutes.eventJSON(old, new))
        }
        let guardian = try AccessGuard(store: store, settings: settings, clock: configuration.accessClock, shared: backend.isShared)
        return (settings, guardian)
    }

    /// Whole-document rules of `PATCH /settings` the domain cannot know: the lock needs a
    /// stored token before it can be enabled, and `covers.allowList` entries must be what the
    /// cover fetcher's address guard understands and, unless the operator started with
    /// `BLUELIBRARY_COVER_ALLOW_FROM_SETTINGS=on`, already opened by `BLUELIBRARY_COVER_ALLOW`
    /// (settings may only narrow it).
    ///
    /// Whether a token is stored is asked of `guardian` (its memory, re-read whenever the
    /// database's token changes), not of the store: the rules run inside the settings' write
    /// transaction, where a second database call would need a second pooled connection.
    static func settingsRules(guardian: AccessGuard, configuration: ServeConfiguration) -> @Sendable (LibrarySettings) -> [FieldError] {
        let environment = (try? CoverAddressPolicy(allowList: configuration.coverAllow)) ?? CoverAddressPolicy()
        let fromSettings = configuration.coverAllowFromSettings
        return { settings in
            var errors: [FieldError] = []
            for (index, entry) in settings.covers.allowList.enumerated() {
                do throws(CoverAddressPolicy.InvalidEntry) {
                    _ = try CoverAddressPolicy(allowing: [entry])
                    if !fromSettings, try !environment.opens(entry: entry) {
                        errors.append(FieldError(
                            field: "covers.allowList[\(index)]",
                            message: "is not opened by the server's BLUELIBRARY_COVER_ALLOW; this setting may only narrow it (the operator can start with BLUELIBRARY_COVER_ALLOW_FROM_SETTINGS=on)"))
                    }
                } catch {
                    errors.append(FieldError(field: "covers.allowList[\(index)]", message: "is \(error.description)"))
                }
            }
            guard settings.access.passcodeEnabled else { return errors }
            if guardian.hasAdminKey { return errors }
            return errors + [FieldError(field: "access.passcodeEnabled",
                               message: "access.passcodeEnabled cannot be true before an admin key for every library without an expiry exists; create one with POST /keys or 'bluelibrary keys create', or set a token with 'bluelibrary token set' (or start with BLUELIBRARY_TOKEN) first")]
        }
    }
}

/// `bluelibrary token set`: hashes a token into the data directory's database and turns the
/// lock on. A running server learns both within `accessPollInterval` (it watches the database).
public enum TokenSetting {
    /// The least a token may be: a passcode guessed online is throttled, but not forever.
    public static let minimumLength = 12

    /// What is wrong with `token` (nil: nothing): at least `minimumLength` characters, each
    /// printable ASCII without spaces (it travels in an Authorization header). The same rules
    /// hold for the command line and `BLUELIBRARY_TOKEN`.
    public static func problem(with token: String) -> String? {
        guard token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            return "the token must be printable ASCII without spaces (it travels in an Authorization header)"
        }
        guard token.utf8.count >= minimumLength else {
            return "the token must be at least \(minimumLength) characters"
        }
        return nil
    }

    /// Stores `token`'s hash in the SQLite database of `dataDirectory`, or in the PostgreSQL
    /// database `databaseURL` names (every instance on it learns it within a second).
    /// `databasePassword` (from `BLUELIBRARY_DATABASE_PASSWORD_FILE`) goes to libpq apart from the URL.
    public static func set(
        _ token: AccessToken, dataDirectory: String, databaseURL: String? = nil, databasePassword: String? = nil
    ) throws(ConfigurationError) {
        if let problem = problem(with: token.value) { throw ConfigurationError(problem) }
        let backend = try openBackend(dataDirectory: dataDirectory, databaseURL: databaseURL, databasePassword: databasePassword)
        do {
            try AccessGuard.storeToken(token.value, in: backend.records)
            let settings = try SettingsService(store: backend.records)
            try settings.modify { $0.access.passcodeEnabled = true }
        } catch {
            throw ConfigurationError("cannot store the token hash in \(backend.location): \(error)")
        }
    }

    /// The database of a command that writes access records with no server (`token set`,
    /// `keys create`): SQLite in `dataDirectory`, or the PostgreSQL database `databaseURL`
    /// names, with one connection.
    static func openBackend(dataDirectory: String, databaseURL: String?, databasePassword: String?)
        throws(ConfigurationError) -> any StoreBackend
    {
        var configuration = ServeConfiguration()
        configuration.dataDirectory = dataDirectory
        configuration.databaseURL = databaseURL
        configuration.databasePassword = databasePassword
        configuration.databasePoolSize = 1
        do {
            return try BlueLibraryApp.openBackend(configuration)
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError("cannot open the database in \(dataDirectory): \(error)")
        }
    }
}
