import Foundation

/// Reads a stored settings document of any schema version this build knows and upgrades it
/// to `LibrarySettings.currentSchemaVersion`, one step at a time.
///
/// - v1 (the first stored form, keyed like the seed's `PassCodeSettings`):
///   `{"schemaVersion": 1, "access": {"isPassCodeEnabled", "attemptCount", "checkInterval"},
///   "covers": {...}, "undo": {...}}`; `checkInterval` in (possibly fractional) seconds.
/// - v2: `access` renamed to `passcodeEnabled`, `attemptLimit`, `checkIntervalSeconds`
///   (whole seconds, rounded up), plus `access.protectReads` and the `paging` section
///   (both at their defaults after the upgrade).
///
/// A document without `schemaVersion` is v1. A newer version than this build knows is refused
/// rather than silently losing fields.
public enum SettingsMigration {
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Decodes stored bytes, upgrading older layouts. Returns the settings and whether an
    /// upgrade happened (the caller then stores the upgraded form).
    public static func decode(stored bytes: [UInt8]) throws(Failure) -> (settings: LibrarySettings, upgradedFrom: Int?) {
        guard var object = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] else {
            throw Failure(description: "the stored settings are not a JSON object")
        }
        let version = (object["schemaVersion"] as? NSNumber)?.intValue ?? 1
        guard version >= 1 else { throw Failure(description: "stored settings have schemaVersion \(version)") }
        guard version <= LibrarySettings.currentSchemaVersion else {
            throw Failure(description: "the stored settings have schemaVersion \(version), newer than this build knows (\(LibrarySettings.currentSchemaVersion)); run a newer bluelibrary")
        }
        var step = version
        while step < LibrarySettings.currentSchemaVersion {
            switch step {
            case 1: object = upgrade1to2(object)
            default: break
            }
            step += 1
        }
        object["schemaVersion"] = LibrarySettings.currentSchemaVersion
        do {
            let data = try JSONSerialization.data(withJSONObject: object)
            var settings = try JSONDecoder().decode(LibrarySettings.self, from: data)
            settings.schemaVersion = LibrarySettings.currentSchemaVersion
            return (settings, version == LibrarySettings.currentSchemaVersion ? nil : version)
        } catch {
            throw Failure(description: "the stored settings (schemaVersion \(version)) do not decode: \(error)")
        }
    }

    static func upgrade1to2(_ v1: [String: Any]) -> [String: Any] {
        var document = v1
        var access: [String: Any] = [:]
        if let old = v1["access"] as? [String: Any] {
            if let enabled = old["isPassCodeEnabled"] ?? old["isPasscodeEnabled"] { access["passcodeEnabled"] = enabled }
            if let count = old["attemptCount"] { access["attemptLimit"] = count }
            if let interval = (old["checkInterval"] as? NSNumber)?.doubleValue {
                access["checkIntervalSeconds"] = max(1, Int(interval.rounded(.up)))
            }
        }
        document["access"] = access
        return document
    }
}
