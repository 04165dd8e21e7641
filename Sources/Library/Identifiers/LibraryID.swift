import BlueLibraryAPI

/// The id of one album library: lowercase ASCII letters, digits and `-`, 1 to 40 characters
/// (`default`, `jazz`, `road-trip-2026`).
///
/// `default` always exists and cannot be deleted: it is the library the routes without a
/// `/libraries/{lib}` prefix mean.
public struct LibraryID: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    public let rawValue: String

    /// Wraps `rawValue` without checking it (for ids read back from storage or made in code).
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// An id from user input.
    /// - Throws: `.invalid` (field `field`) saying what the rule is.
    public init(validating text: String, field: String = "id") throws(LibraryError) {
        guard let reason = CatalogName.problem(text) else {
            self.init(rawValue: text)
            return
        }
        throw .invalid(ValidationFailure([FieldError(field: field, message: "library \(reason)")]))
    }

    /// The library every route without a `/libraries/{lib}` prefix uses.
    public static let `default` = LibraryID(rawValue: "default")

    public var description: String { rawValue }

    public static func < (lhs: LibraryID, rhs: LibraryID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The id of one composite view (`/views/{view}`), with the same rules as a library id.
public struct ViewID: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// An id from user input.
    /// - Throws: `.invalid` (field `field`) saying what the rule is.
    public init(validating text: String, field: String = "id") throws(LibraryError) {
        guard let reason = CatalogName.problem(text) else {
            self.init(rawValue: text)
            return
        }
        throw .invalid(ValidationFailure([FieldError(field: field, message: "view \(reason)")]))
    }

    public var description: String { rawValue }

    public static func < (lhs: ViewID, rhs: ViewID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The shared rule for library and view ids, and for their display names.
public enum CatalogName {
    public static let maxIDLength = CatalogLimits.idLength.upperBound
    public static let maxNameLength = CatalogLimits.nameLength.upperBound

    /// Why `text` is not a valid id (a phrase after "library"/"view"), or nil when it is.
    public static func problem(_ text: String) -> String? {
        CatalogLimits.idProblem(text)
    }

    /// A display name: trimmed, 1 to 200 characters, no U+0000.
    /// - Throws: `.invalid` for field `field`.
    public static func validatedName(_ name: String, field: String = "name") throws(LibraryError) -> String {
        guard !AlbumFieldRules.containsNUL(name) else {
            throw .invalid(ValidationFailure([FieldError(field: field, message: "name \(AlbumFieldRules.nulMessage)")]))
        }
        let trimmed = AlbumFieldRules.trimmed(name)
        guard !trimmed.isEmpty, trimmed.count <= maxNameLength else {
            throw .invalid(ValidationFailure([FieldError(
                field: field, message: "name must be 1 to \(maxNameLength) characters after trimming spaces")]))
        }
        return trimmed
    }
}
