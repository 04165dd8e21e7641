import Foundation

/// One member of a JSON object.
public struct JSONMember {
    public var key: String
    public var value: JSONFieldValue

    public init(key: String, value: JSONFieldValue) {
        self.key = key
        self.value = value
    }
}

/// Reads the fields of one JSON object, collecting every problem instead of stopping.
///
/// `path` prefixes field names in errors, so the same reader names `title` in a request body
/// and `albums[3].title` in an archive. The members come either from a `JSONSerialization`
/// dictionary (request bodies) or straight from the archive's `JSONScanner`; the rules see the
/// same `JSONFieldValue`s either way.
public struct JSONFieldReader {
    /// Whether a key is absent, explicitly `null`, or has a value.
    public enum Field {
        case absent
        case null
        case value(JSONFieldValue)
    }

    /// The object's members; each key at most once.
    public private(set) var members: [JSONMember]
    /// The prefix of field names, or of the array name when `element` is set.
    private let pathPrefix: String
    /// For an array element, its index (the path is then built only when an error needs it).
    private let element: Int?
    public private(set) var errors: [FieldError] = []

    public init(_ object: [String: Any], path: String = "") {
        self.members = object.map { JSONMember(key: $0.key, value: JSONValueKind.fieldValue($0.value)) }
        self.pathPrefix = path
        self.element = nil
    }

    /// - Parameter members: an object's members in document order; when a key repeats, the
    ///   last value counts (as with `JSONSerialization`).
    public init(members: [JSONMember], path: String = "") {
        self.members = members
        self.pathPrefix = path
        self.element = nil
    }

    /// A reader for element `index` of the array `array`: its fields are `array[index].key`.
    public init(members: [JSONMember], array: String, index: Int) {
        self.members = members
        self.pathPrefix = array
        self.element = index
    }

    /// What prefixes field names: `""`, or `albums[3].` for an array element.
    public var path: String {
        guard let element else { return pathPrefix }
        return "\(pathPrefix)[\(element)]."
    }

    /// The displayed name of `key`: `albums[3].year` or just `year`.
    public func name(_ key: String) -> String {
        path + key
    }

    /// The value of `key` (`.null` for JSON `null`); `nil` when absent.
    public func value(_ key: String) -> JSONFieldValue? {
        members.last { Self.same($0.key, key) }?.value
    }

    public func field(_ key: String) -> Field {
        guard let value = value(key) else { return .absent }
        if case .null = value { return .null }
        return .value(value)
    }

    /// Key equality, comparing lengths first: keys of different lengths (nearly every pair
    /// compared) are told apart without a full string comparison.
    @inline(__always)
    private static func same(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && a == b
    }

    public mutating func fail(_ key: String, _ message: String) {
        errors.append(FieldError(field: name(key), message: name(key) + " " + message))
    }

    /// Rejects keys outside `known`, suggesting the closest known key for typos (`titel`).
    /// Keys in `readOnly` get a message saying the server sets them.
    public mutating func rejectUnknownKeys(known: [String], readOnly: [String] = []) {
        guard members.contains(where: { member in !known.contains { Self.same($0, member.key) } }) else { return }
        for key in Set(members.map(\.key)).sorted() where !known.contains(key) {
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
    public mutating func string(_ key: String, _ value: JSONFieldValue, hint: String) -> String? {
        guard case .string(let string) = value else {
            fail(key, "must be \(hint), not \(value.kindDescription)")
            return nil
        }
        return string
    }
}

extension JSONFieldReader {
    /// The value of a field the contract does not mark nullable: `nil` when absent, and also
    /// for an explicit `null`, which is recorded as "`key` must be `expected`, not null".
    /// (A `null` that silently meant "absent" would hide a client's bug.)
    public mutating func nonNullValue(_ key: String, expected: String) -> JSONFieldValue? {
        switch field(key) {
        case .absent:
            return nil
        case .null:
            fail(key, "must be \(expected), not null; leave the field out instead")
            return nil
        case .value(let value):
            return value
        }
    }
}
