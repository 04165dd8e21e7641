import BlueLibraryAPI
import Essentials
import Foundation
import Library
import ServerRecords

/// `POST /keys` and `PATCH /keys/{id}`: `{"name": "backup", "scopes": ["read"], "libraries":
/// ["jazz"], "expiresAt": "2027-01-01T00:00:00Z"}`.
///
/// - `name`: 1-200 characters after trimming; required to create.
/// - `scopes`: a non-empty array of `read`, `write`, `admin`; required to create.
/// - `libraries`: library ids (1 to 32, no duplicates; the id rules only: a key may name a
///   library made later), or `null` for every library (the default).
/// - `expiresAt`: an RFC 3339 time in the future, or `null` for never (the default).
/// - Every bad field is reported at once; unknown keys are refused, `id`, `createdAt` and
///   `secret` as read-only.
struct KeyRequest: Sendable, Equatable {
    var name: String?
    var scopes: [AccessKey.Scope]?
    /// `.some(nil)`: every library.
    var libraries: [String]??
    /// `.some(nil)`: never expires.
    var expiresAt: Date??

    static let example = #"{"name": "backup", "scopes": ["read"], "libraries": ["jazz"], "expiresAt": null}"#
    static let maxLibraries = 32

    /// A `POST /keys` body: `name` and `scopes` are required.
    static func decodeCreation(json bytes: [UInt8], now: Date) throws(LibraryError) -> KeyRequest {
        let request = try decode(json: bytes, now: now)
        var missing: [FieldError] = []
        if request.name == nil { missing.append(FieldError(field: "name", message: "name is required: what the key is for, like \"backup\"")) }
        if request.scopes == nil {
            missing.append(FieldError(field: "scopes", message: "scopes is required: a list of read, write and admin, like [\"read\"]"))
        }
        guard missing.isEmpty else { throw .invalid(ValidationFailure(missing)) }
        return request
    }

    static func decode(json bytes: [UInt8], now: Date) throws(LibraryError) -> KeyRequest {
        let object = try LibraryError.reading { () throws(BodyError) in
            try JSONObjectParser.object(from: bytes, what: "the request body", example: example)
        }
        var reader = JSONFieldReader(object)
        reader.rejectUnknownKeys(known: ["name", "scopes", "libraries", "expiresAt"], readOnly: ["id", "createdAt", "secret"])
        var errors = reader.errors
        var result = KeyRequest()
        if let name = object["name"] { result.name = ViewDefinitionRequest.displayName(name, errors: &errors) }
        if let scopes = object["scopes"] { result.scopes = readScopes(scopes, errors: &errors) }
        if let libraries = object["libraries"] { result.libraries = .some(readLibraries(libraries, errors: &errors)) }
        if let expiry = object["expiresAt"] { result.expiresAt = .some(readExpiry(expiry, now: now, errors: &errors)) }
        guard errors.isEmpty else { throw .invalid(ValidationFailure(errors)) }
        return result
    }

    private static func readScopes(_ value: Any, errors: inout [FieldError]) -> [AccessKey.Scope]? {
        let hint = "a list of read, write and admin, like [\"read\", \"write\"] (admin includes write, write includes read)"
        guard let array = value as? [Any], !array.isEmpty else {
            errors.append(FieldError(field: "scopes", message: "scopes must be \(hint), not \(JSONValueKind.describe(value))"))
            return nil
        }
        var scopes: [AccessKey.Scope] = []
        for (index, element) in array.enumerated() {
            guard let text = element as? String, let scope = AccessKey.Scope(rawValue: text) else {
                errors.append(FieldError(field: "scopes[\(index)]", message: "scopes[\(index)] must be read, write or admin, not \(JSONValueKind.describe(element))"))
                continue
            }
            scopes.append(scope)
        }
        return scopes
    }

    private static func readLibraries(_ value: Any, errors: inout [FieldError]) -> [String]? {
        if value is NSNull { return nil }
        guard let array = value as? [Any], (1...maxLibraries).contains(array.count) else {
            errors.append(FieldError(
                field: "libraries",
                message: "libraries must be 1 to \(maxLibraries) library ids like [\"jazz\"], or null for every library, not \(JSONValueKind.describe(value))"))
            return nil
        }
        var ids: [String] = []
        for (id, field) in ViewDefinitionRequest.libraryIDs(in: array, field: "libraries", errors: &errors) {
            if ids.contains(id.rawValue) {
                errors.append(FieldError(field: field, message: "\(field) names \(id.rawValue) a second time"))
            } else {
                ids.append(id.rawValue)
            }
        }
        return ids
    }

    private static func readExpiry(_ value: Any, now: Date, errors: inout [FieldError]) -> Date? {
        if value is NSNull { return nil }
        guard let text = value as? String, let date = Timestamp.parse(text) else {
            errors.append(FieldError(
                field: "expiresAt", message: "expiresAt must be an RFC 3339 time like \"2027-01-01T00:00:00Z\", or null for never, not \(JSONValueKind.describe(value))"))
            return nil
        }
        guard date > now else {
            errors.append(FieldError(field: "expiresAt", message: "expiresAt must be in the future (the server's time is \(Timestamp.format(now)))"))
            return nil
        }
        return date
    }
}
