import Foundation

/// Reads the fields of one JSON object, collecting every problem instead of stopping.
///
/// `path` prefixes field names in errors, so the same reader names `title` in a request body
/// and `albums[3].title` in an archive.
struct JSONFieldReader {
    /// Whether a key is absent, explicitly `null`, or has a value.
    enum Field {
        case absent
        case null
        case value(Any)
    }

    let object: [String: Any]
    let path: String
    private(set) var errors: [FieldError] = []

    init(_ object: [String: Any], path: String = "") {
        self.object = object
        self.path = path
    }

    /// The displayed name of `key`: `albums[3].year` or just `year`.
    func name(_ key: String) -> String {
        path + key
    }

    func field(_ key: String) -> Field {
        guard let value = object[key] else { return .absent }
        if value is NSNull { return .null }
        return .value(value)
    }

    mutating func fail(_ key: String, _ message: String) {
        errors.append(FieldError(field: name(key), message: name(key) + " " + message))
    }

    /// Rejects keys outside `known`, suggesting the closest known key for typos (`titel`).
    /// Keys in `readOnly` get a message saying the server sets them.
    mutating func rejectUnknownKeys(known: [String], readOnly: [String] = []) {
        for key in object.keys.sorted() where !known.contains(key) {
            if readOnly.contains(key) {
                fail(key, "is assigned by the server and cannot be set; remove it")
                continue
            }
            var message = "is not a known field"
            if let suggestion = KeySuggestion.closest(to: key, in: known) {
                message += "; did you mean \(suggestion)?"
            }
            message += " Known fields: " + known.joined(separator: ", ")
            fail(key, message)
        }
    }

    /// A string value, or `nil` after recording a type error (also for `null`).
    mutating func string(_ key: String, _ value: Any, hint: String) -> String? {
        guard let string = value as? String else {
            fail(key, "must be \(hint), not \(JSONValueKind.describe(value))")
            return nil
        }
        return string
    }
}
