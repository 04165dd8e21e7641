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
        /// Bounds of an array's length.
        public let minimumItems: Int?
        public let maximumItems: Int?

        public init(_ name: String, _ kind: Kind, nullable: Bool = false, required: Bool = true, length: ClosedRange<Int>? = nil,
                    maximumLength: Int? = nil, range: ClosedRange<Int>? = nil, minimum: Int? = nil, maximum: Int? = nil,
                    minimumItems: Int? = nil, maximumItems: Int? = nil) {
            self.name = name
            self.kind = kind
            self.nullable = nullable
            self.required = required
            self.length = length
            self.maximumLength = maximumLength ?? length?.upperBound
            self.minimum = minimum ?? range?.lowerBound
            self.maximum = maximum ?? range?.upperBound
            self.minimumItems = minimumItems
            self.maximumItems = maximumItems
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
        Field(AlbumField.year.rawValue, .integer, nullable: true, range: AlbumFieldLimits.yearRange),
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

    /// `AlbumInput`: the body of `POST /albums` and `POST /api/addAlbum` (`AlbumAddRequest`).
    public static let albumInput = WireSchema("AlbumInput", [
        Field("title", .string, length: AlbumFieldLimits.textLength),
        Field("artist", .string, length: AlbumFieldLimits.textLength),
        Field("genre", .string, nullable: true, required: false, length: AlbumFieldLimits.textLength),
        Field("year", .integer, nullable: true, required: false, range: AlbumFieldLimits.yearRange),
        Field("coverUrl", .string, nullable: true, required: false, maximumLength: AlbumFieldLimits.maximumURLLength),
        Field("index", .integer, nullable: true, required: false, range: IntegerRules.positions),
    ])

    /// `AlbumPatch`: a merge patch of an album (`title` and `artist` may not be removed).
    public static let albumPatch = WireSchema("AlbumPatch", [
        Field("title", .string, required: false, length: AlbumFieldLimits.textLength),
        Field("artist", .string, required: false, length: AlbumFieldLimits.textLength),
        Field("genre", .string, nullable: true, required: false, length: AlbumFieldLimits.textLength),
        Field("year", .integer, nullable: true, required: false, range: AlbumFieldLimits.yearRange),
        Field("coverUrl", .string, nullable: true, required: false, maximumLength: AlbumFieldLimits.maximumURLLength),
    ])

    /// `UndoResult` (`POST /undo`).
    public static let undoResult = WireSchema("UndoResult", [
        Field("undone", .string),
        Field("album", .object, nullable: true),
        Field("version", .integer),
    ])

    /// `ViewFilter`: only the filters set are sent.
    public static let viewFilter = WireSchema("ViewFilter", [
        Field("q", .string, required: false, maximumLength: CatalogLimits.filterTextLength),
        Field("artist", .string, required: false, maximumLength: CatalogLimits.filterTextLength),
        Field("genre", .string, required: false, maximumLength: CatalogLimits.filterTextLength),
        Field("yearFrom", .integer, required: false, range: CatalogLimits.filterYears),
        Field("yearTo", .integer, required: false, range: CatalogLimits.filterYears),
    ])

    /// `View`: `sources` is empty only after every library it showed was deleted.
    public static let view = WireSchema("View", [
        Field("id", .string),
        Field("name", .string, length: CatalogLimits.nameLength),
        Field("sources", .array, maximumItems: CatalogLimits.viewSources.upperBound),
        Field("filter", .object),
        Field("revision", .integer),
        Field("versions", .object),
    ])

    /// `ViewInput`: the body of `POST /views`.
    public static let viewInput = WireSchema("ViewInput", [
        Field("id", .string),
        Field("name", .string, required: false, length: CatalogLimits.nameLength),
        Field("sources", .array, minimumItems: CatalogLimits.viewSources.lowerBound, maximumItems: CatalogLimits.viewSources.upperBound),
        Field("filter", .object, nullable: true, required: false),
    ])

    /// `Problem`: every error answer (RFC 9457); `errors` lists the bad fields of a request.
    public static let problem = WireSchema("Problem", [
        Field("type", .string),
        Field("title", .string),
        Field("status", .integer),
        Field("detail", .string),
        Field("instance", .string, required: false),
        Field("errors", .array, required: false),
    ])

    /// Every schema described here.
    public static let all: [WireSchema] = [
        .album, .albumPage, .library, .undoStatus, .savedState, .albumInput, .albumPatch, .undoResult, .viewFilter, .view,
        .viewInput, .problem,
    ]
}
