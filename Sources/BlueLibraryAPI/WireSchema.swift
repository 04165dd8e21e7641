/// The bounds of an album's fields, as the server enforces them and `openapi.yaml` states them.
public enum AlbumFieldLimits {
    /// `title`, `artist` and `genre`: 1 to 500 characters once trimmed.
    public static let textLength = 1...500
    /// `coverUrl`: at most 2048 characters.
    public static let maximumURLLength = 2048
    /// `year`.
    public static let yearRange = 1000...9999
    /// The genre an album gets when none is given (the tutorial's initializer always set it).
    public static let defaultGenre = "Pop"
}

/// What a resource looks like on the wire, field by field: the description `WireSchemaTests`
/// compares with `openapi.yaml`'s schema of the same name (both ways: every field, its JSON
/// type, whether it may be `null` or absent, its bounds), and with what the Codable type (and,
/// for albums, `AlbumJSON`) writes.
public struct WireSchema: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case string, integer, boolean, array, object
    }

    public struct Field: Sendable, Equatable {
        public let name: String
        public let kind: Kind
        /// The value may be `null`.
        public let nullable: Bool
        /// The key is always present.
        public let required: Bool
        /// Length bounds of a string.
        public let length: ClosedRange<Int>?
        public let maximumLength: Int?
        /// Value bounds of an integer.
        public let minimum: Int?
        public let maximum: Int?

        public init(_ name: String, _ kind: Kind, nullable: Bool = false, required: Bool = true, length: ClosedRange<Int>? = nil,
                    maximumLength: Int? = nil, minimum: Int? = nil, maximum: Int? = nil) {
            self.name = name
            self.kind = kind
            self.nullable = nullable
            self.required = required
            self.length = length
            self.maximumLength = maximumLength ?? length?.upperBound
            self.minimum = minimum
            self.maximum = maximum
        }
    }

    /// The schema's name in `openapi.yaml` (`components/schemas`).
    public let name: String
    public let fields: [Field]

    public init(_ name: String, _ fields: [Field]) {
        self.name = name
        self.fields = fields
    }
}

extension WireSchema {
    /// `Album`: what every album has (`index` and `library` join it in some representations).
    public static let album = WireSchema("Album", [
        Field(AlbumField.id.rawValue, .string),
        Field(AlbumField.title.rawValue, .string, length: AlbumFieldLimits.textLength),
        Field(AlbumField.artist.rawValue, .string, length: AlbumFieldLimits.textLength),
        Field(AlbumField.genre.rawValue, .string, length: AlbumFieldLimits.textLength),
        Field(AlbumField.year.rawValue, .integer, nullable: true,
              minimum: AlbumFieldLimits.yearRange.lowerBound, maximum: AlbumFieldLimits.yearRange.upperBound),
        Field(AlbumField.coverUrl.rawValue, .string, nullable: true, maximumLength: AlbumFieldLimits.maximumURLLength),
        Field(AlbumField.createdAt.rawValue, .string),
        Field(AlbumField.updatedAt.rawValue, .string),
    ])

    /// `AlbumPage`: a page of a library's list.
    public static let albumPage = WireSchema("AlbumPage", [
        Field("items", .array),
        Field("next", .string, nullable: true),
        Field("total", .integer, required: false, minimum: 0),
        Field("version", .integer),
    ])

    /// `Library`.
    public static let library = WireSchema("Library", [
        Field("id", .string),
        Field("name", .string),
        Field("albumCount", .integer, minimum: 0),
        Field("version", .integer),
    ])

    /// `UndoStatus` (`GET /undo`).
    public static let undoStatus = WireSchema("UndoStatus", [
        Field("depth", .integer, minimum: 0),
        Field("canUndo", .boolean),
        Field("next", .string, nullable: true),
    ])

    /// `SavedState` (`GET/PUT /state`).
    public static let savedState = WireSchema("SavedState", [
        Field("client", .string),
        Field("currentAlbumIndex", .integer, minimum: 0),
        Field("albumID", .string, nullable: true),
        Field("updatedAt", .string, nullable: true),
    ])

    /// Every schema described here.
    public static let all: [WireSchema] = [.album, .albumPage, .library, .undoStatus, .savedState]
}
