import BlueLibraryAPI
import Library
import Foundation

/// The body of `POST /views` and `PATCH /views/{view}`:
/// `{"id": "everything", "name": "Everything", "sources": ["default", "jazz"],
///   "filter": {"q": "...", "artist": "...", "genre": "...", "yearFrom": 1970, "yearTo": 1979}}`.
///
/// Rules:
/// - Every member is optional here; a missing one is `nil` (unchanged for PATCH). `POST`
///   requires `id` and `sources` (``decodeCreation(json:)``); `PATCH` refuses `id` (a view is
///   renamed with `name`, never re-identified).
/// - `sources` is an array of library ids (each checked by the id rule; whether they exist is
///   the catalog's question); `filter` an object with only the list filters, all optional.
///   `null` for `filter` means "no filter".
/// - `revision` and `versions` are assigned by the server.
/// - Every bad field is reported at once, named as the user wrote it (`sources[1]`,
///   `filter.yearFrom`).
public struct ViewDefinitionRequest: Sendable, Equatable {
    public var id: ViewID?
    public var name: String?
    public var sources: [LibraryID]?
    public var filter: AlbumFilter?

    public init(id: ViewID? = nil, name: String? = nil, sources: [LibraryID]? = nil, filter: AlbumFilter? = nil) {
        self.id = id
        self.name = name
        self.sources = sources
        self.filter = filter
    }

    static let example = #"{"id": "everything", "name": "Everything", "sources": ["default", "jazz"]}"#
    static let filterKeys = ["q", "artist", "genre", "yearFrom", "yearTo"]
    /// The years a view's `filter.yearFrom`/`filter.yearTo` may name.
    static let filterYears = CatalogLimits.filterYears

    /// A `POST /views` body, complete: the filter defaults to none, the name to nil (the
    /// catalog's default, the id).
    public struct Creation: Sendable, Equatable {
        public var id: ViewID
        public var name: String?
        public var sources: [LibraryID]
        public var filter: AlbumFilter
    }

    /// A `POST /views` body: `id` and `sources` are required.
    /// - Throws: `.malformed` for syntax; `.invalid` naming every bad field.
    public static func decodeCreation(json bytes: [UInt8]) throws(LibraryError) -> Creation {
        let request = try decode(json: bytes, allowID: true)
        var missing: [FieldError] = []
        if request.id == nil { missing.append(FieldError(field: "id", message: "id is required: the view's id, like \"everything\"")) }
        if request.sources == nil {
            missing.append(FieldError(field: "sources", message: "sources is required: the library ids the view shows, like [\"default\", \"jazz\"]"))
        }
        guard missing.isEmpty, let id = request.id, let sources = request.sources else { throw .invalid(ValidationFailure(missing)) }
        return Creation(id: id, name: request.name, sources: sources, filter: request.filter ?? .all)
    }

    /// A `PATCH /views/{view}` body: what is given changes, the rest stays.
    /// - Throws: `.malformed` for syntax; `.invalid` naming every bad field.
    public static func decodeUpdate(json bytes: [UInt8]) throws(LibraryError) -> ViewDefinitionRequest {
        try decode(json: bytes, allowID: false)
    }

    private static func decode(json bytes: [UInt8], allowID: Bool) throws(LibraryError) -> ViewDefinitionRequest {
        let object = try LibraryError.reading { () throws(BodyError) in try JSONObjectParser.object(from: bytes, what: "the request body", example: example) }
        var reader = JSONFieldReader(object)
        reader.rejectUnknownKeys(
            known: allowID ? ["id", "name", "sources", "filter"] : ["name", "sources", "filter"],
            readOnly: allowID ? ["revision", "versions"] : ["id", "revision", "versions"])
        var errors = reader.errors
        var result = ViewDefinitionRequest()
        if allowID, let text = object["id"] {
            if let text = text as? String {
                do {
                    result.id = try ViewID(validating: text)
                } catch {
                    errors += error.fieldErrors
                }
            } else {
                errors.append(FieldError(field: "id", message: "id must be a string like \"everything\", not \(JSONValueKind.describe(text))"))
            }
        }
        if let name = object["name"] { result.name = ViewDefinitionRequest.displayName(name, errors: &errors) }
        if let sources = object["sources"] {
            result.sources = readSources(sources, errors: &errors)
        }
        if let filter = object["filter"] {
            result.filter = readFilter(filter, errors: &errors)
        }
        guard errors.isEmpty else { throw .invalid(ValidationFailure(errors)) }
        return result
    }

    private static func readSources(_ value: Any, errors: inout [FieldError]) -> [LibraryID]? {
        guard let array = value as? [Any] else {
            errors.append(FieldError(
                field: "sources", message: "sources must be an array of library ids like [\"default\", \"jazz\"], not \(JSONValueKind.describe(value))"))
            return nil
        }
        return libraryIDs(in: array, field: "sources", errors: &errors).map(\.id)
    }

    /// A JSON `name` as a display name (trimmed, 1 to 200 characters), or nil after recording
    /// why it is not one.
    static func displayName(_ value: Any, errors: inout [FieldError]) -> String? {
        guard let name = value as? String else {
            errors.append(FieldError(field: "name", message: "name must be a string, not \(JSONValueKind.describe(value))"))
            return nil
        }
        do {
            return try CatalogName.validatedName(name)
        } catch {
            errors += error.fieldErrors
            return nil
        }
    }

    /// The library ids of a JSON array, each with the field that named it (`sources[2]`); a
    /// bad element is recorded in `errors` and left out.
    static func libraryIDs(in array: [Any], field: String, errors: inout [FieldError]) -> [(id: LibraryID, field: String)] {
        var ids: [(id: LibraryID, field: String)] = []
        for (index, element) in array.enumerated() {
            let named = "\(field)[\(index)]"
            guard let text = element as? String else {
                errors.append(FieldError(field: named, message: "\(named) must be a library id string, not \(JSONValueKind.describe(element))"))
                continue
            }
            do {
                ids.append((try LibraryID(validating: text, field: named), named))
            } catch {
                errors += error.fieldErrors
            }
        }
        return ids
    }

    private static func readFilter(_ value: Any, errors: inout [FieldError]) -> AlbumFilter? {
        if value is NSNull { return .all }
        guard let object = value as? [String: Any] else {
            errors.append(FieldError(
                field: "filter", message: "filter must be an object like {\"genre\": \"Jazz\"}, not \(JSONValueKind.describe(value))"))
            return nil
        }
        var reader = JSONFieldReader(object, path: "filter.")
        reader.rejectUnknownKeys(known: filterKeys)
        var filter = AlbumFilter()
        for key in ["q", "artist", "genre"] {
            guard let field = reader.nonNullValue(key, expected: "a string") else { continue }
            guard let text = reader.string(key, field, hint: "a string") else { continue }
            switch key {
            case "q": filter.text = text.isEmpty ? nil : text
            case "artist": filter.artist = text
            default: filter.genre = text
            }
        }
        for key in ["yearFrom", "yearTo"] {
            guard let field = reader.nonNullValue(key, expected: IntegerRules.wholeNumber(filterYears)),
                  let year = reader.integer(key, field, in: filterYears) else { continue }
            if key == "yearFrom" { filter.yearFrom = year } else { filter.yearTo = year }
        }
        errors += reader.errors
        do {
            return try filter.validated()
        } catch {
            errors += error.fieldErrors.map { FieldError(field: "filter." + $0.field, message: "filter." + $0.message) }
            return nil
        }
    }
}

extension LibraryError {
    /// The field errors of an `.invalid`; any other error as one error on no field.
    var fieldErrors: [FieldError] {
        if case let .invalid(failure) = self { return failure.errors }
        return [FieldError(field: "", message: message)]
    }
}
