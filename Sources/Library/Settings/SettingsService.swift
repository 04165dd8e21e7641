import BlueLibraryAPI
import Foundation
import Synchronization

/// Where the settings document is kept (one JSON document per database).
public protocol SettingsStore: Sendable {
    /// The stored document, or `nil` when none was ever stored.
    func loadSettings() throws -> [UInt8]?
    /// Replaces the stored document (committed before returning).
    func saveSettings(_ json: [UInt8]) throws
    /// Reads the stored document, and stores what `body` returns (nothing when it returns nil),
    /// in one transaction: a write made elsewhere in between is never overwritten.
    func updateSettings(_ body: ([UInt8]?) throws -> [UInt8]?) throws
}

extension SettingsStore {
    /// For stores with one writer (tests): read, then write.
    public func updateSettings(_ body: ([UInt8]?) throws -> [UInt8]?) throws {
        if let next = try body(loadSettings()) { try saveSettings(next) }
    }
}

/// The live settings: loaded (and upgraded) once, changed only through `update`, which
/// validates, stores, swaps the in-memory copy and tells the listeners, in that order.
///
/// Every change is applied to the *stored* document, read in the same transaction that writes
/// it (another process, e.g. `bluelibrary token set`, may have changed it), never to the
/// in-memory copy, which may be stale. `reload()` adopts what is stored (a watcher calls it
/// when the database changed). The in-memory copy's lock is held only to copy or swap a value,
/// never across I/O: writers are serialised by a lock of their own.
public final class SettingsService: Sendable {
    private let store: any SettingsStore
    private let state: Mutex<LibrarySettings>
    /// Serialises changes and reloads (held across the database write; never taken by readers).
    private let writer = Mutex<Void>(())
    /// `access.passcodeEnabled` of `current`, readable without the lock: every request asks.
    private let passcodeFlag: Atomic<Bool>
    /// `access.protectReads` of `current`, the same way.
    private let protectReadsFlag: Atomic<Bool>
    private let listeners = Mutex<[@Sendable (_ old: LibrarySettings, _ new: LibrarySettings) -> Void]>([])
    /// The schema version the stored document was upgraded from at load (nil: none needed).
    public let upgradedFrom: Int?

    /// Loads the stored document (defaults when nothing is stored) and stores the upgraded
    /// form when it was older.
    public init(store: any SettingsStore) throws(LibraryError) {
        self.store = store
        var settings = LibrarySettings.defaults
        var upgradedFrom: Int?
        do {
            if let bytes = try store.loadSettings() {
                let decoded = try SettingsMigration.decode(stored: bytes)
                settings = decoded.settings
                upgradedFrom = decoded.upgradedFrom
                if upgradedFrom != nil { try store.saveSettings(settings.encoded()) }
            }
        } catch {
            throw .storage(UnderlyingError(error))
        }
        self.upgradedFrom = upgradedFrom
        state = Mutex(settings)
        passcodeFlag = Atomic(settings.access.passcodeEnabled)
        protectReadsFlag = Atomic(settings.access.protectReads)
    }

    public var current: LibrarySettings { state.withLock { $0 } }

    /// The paging settings alone (read on every list request; no copy of the rest).
    public var paging: LibrarySettings.Paging { state.withLock { $0.paging } }

    /// Whether the passcode lock is on (a relaxed atomic read, for the per-request check).
    public var passcodeEnabled: Bool { passcodeFlag.load(ordering: .relaxed) }

    /// Whether reads need a key too (a relaxed atomic read, for the per-request check).
    public var readsProtected: Bool { protectReadsFlag.load(ordering: .relaxed) }

    /// Calls `listener(old, new)` after every committed change (on the changing thread).
    public func observe(_ listener: @escaping @Sendable (_ old: LibrarySettings, _ new: LibrarySettings) -> Void) {
        listeners.withLock { $0.append(listener) }
    }

    /// Applies a merge patch.
    ///
    /// - Parameters:
    ///   - precondition: runs first, under the lock, with the current settings (an `If-Match`
    ///     check); whatever it throws is rethrown and nothing changes.
    ///   - validate: extra whole-document rules of the caller (e.g. "a token must be set
    ///     before the lock is enabled"); their problems join the patch's own.
    /// - Returns: the settings now in force.
    public func update(
        patch bytes: [UInt8],
        precondition: (LibrarySettings) throws -> Void = { _ in },
        validate: (LibrarySettings) -> [FieldError] = { _ in [] }
    ) throws -> LibrarySettings {
        try change(precondition: precondition) { current throws(LibraryError) in
            let next = try SettingsPatch.apply(bytes, to: current)
            let extra = validate(next)
            guard extra.isEmpty else { throw LibraryError.invalid(ValidationFailure(extra)) }
            return next
        }
    }

    /// Changes settings from code (e.g. `BLUELIBRARY_TOKEN` turning the lock on at start).
    @discardableResult
    public func modify(_ body: (inout LibrarySettings) -> Void) throws(LibraryError) -> LibrarySettings {
        do {
            return try change(precondition: { _ in }) { current throws(LibraryError) in
                var next = current
                body(&next)
                return next
            }
        } catch let error as LibraryError {
            throw error
        } catch {
            throw .storage(UnderlyingError(error))
        }
    }

    /// Adopts the stored document if it differs from the one in memory (listeners are told).
    public func reload() throws(LibraryError) {
        do {
            try writer.withLock { _ in
                let stored = try Self.decode(store.loadSettings())
                adopt(stored)
            }
        } catch let error as LibraryError {
            throw error
        } catch {
            throw .storage(UnderlyingError(error))
        }
    }

    private static func decode(_ bytes: [UInt8]?) throws -> LibrarySettings {
        guard let bytes else { return .defaults }
        return try SettingsMigration.decode(stored: bytes).settings
    }

    /// Puts `new` in memory and tells the listeners (call with `writer` held).
    private func adopt(_ new: LibrarySettings) {
        let old = state.withLock { current -> LibrarySettings in
            let old = current
            current = new
            return old
        }
        passcodeFlag.store(new.access.passcodeEnabled, ordering: .relaxed)
        protectReadsFlag.store(new.access.protectReads, ordering: .relaxed)
        if old != new {
            for listener in listeners.withLock({ $0 }) { listener(old, new) }
        }
    }

    private func change(
        precondition: (LibrarySettings) throws -> Void,
        _ transform: (LibrarySettings) throws(LibraryError) -> LibrarySettings
    ) throws -> LibrarySettings {
        try writer.withLock { _ in
            var stored: LibrarySettings?
            var next: LibrarySettings?
            do {
                try store.updateSettings { bytes in
                    let current: LibrarySettings
                    do {
                        current = try Self.decode(bytes)
                    } catch {
                        throw LibraryError.storage(UnderlyingError(error))
                    }
                    stored = current
                    try precondition(current)
                    let changed = try transform(current)
                    next = changed
                    return changed == current ? nil : changed.encoded()
                }
            } catch {
                // Refused, but what is stored is now known: memory follows it.
                if let stored { adopt(stored) }
                if error is LibraryError { throw error }
                if stored == nil || next != nil { throw LibraryError.storage(UnderlyingError(error)) }
                throw error
            }
            guard let next else { return current }
            adopt(next)
            return next
        }
    }
}
