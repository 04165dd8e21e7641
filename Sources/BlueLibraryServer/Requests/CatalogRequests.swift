import BlueLibraryAPI
import Library
import Foundation

/// `POST /libraries`: `{"id": "jazz", "name": "Jazz"}` (name optional: the id).
public struct LibraryCreateRequest: Sendable, Equatable {
    public var id: LibraryID
    /// Trimmed; nil when the body has none (the library is named by its id).
    public var name: String?

    /// - Throws: `.malformed` for syntax, `.invalid` naming every bad field (`id`, `name`,
    ///   unknown keys).
    public static func decode(json bytes: [UInt8]) throws(LibraryError) -> LibraryCreateRequest {
        let object = try LibraryError.reading { () throws(BodyError) in try JSONObjectParser.object(from: bytes, what: "the request body", example: #"{"id": "jazz", "name": "Jazz"}"#) }
        var reader = JSONFieldReader(object)
        reader.rejectUnknownKeys(known: ["id", "name"], readOnly: ["albumCount", "version"])
        var id: LibraryID?
        switch reader.field("id") {
        case .absent, .null:
            reader.fail("id", "is required: lowercase letters a-z, digits 0-9 and '-', 1 to 40 characters, like \"jazz\"")
        case .value(let value):
            if let text = reader.string("id", value, hint: "a string like \"jazz\"") {
                id = reader.libraryID("id", text)
            }
        }
        let name = reader.catalogName()
        guard reader.errors.isEmpty, let id else { throw .invalid(ValidationFailure(reader.errors)) }
        return LibraryCreateRequest(id: id, name: name)
    }
}

/// `PATCH /libraries/{lib}`: `{"name": "Jazz"}`.
public enum LibraryRenameRequest {
    /// The new display name (trimmed).
    /// - Throws: `.malformed` for syntax, `.invalid` for a missing or bad `name` or unknown keys.
    public static func decode(json bytes: [UInt8]) throws(LibraryError) -> String {
        let object = try LibraryError.reading { () throws(BodyError) in try JSONObjectParser.object(from: bytes, what: "the request body", example: #"{"name": "Jazz"}"#) }
        var reader = JSONFieldReader(object)
        reader.rejectUnknownKeys(known: ["name"], readOnly: ["id", "albumCount", "version"])
        let name = reader.catalogName()
        if name == nil, reader.errors.isEmpty { reader.fail("name", "is required: the library's display name") }
        guard reader.errors.isEmpty, let name else { throw .invalid(ValidationFailure(reader.errors)) }
        return name
    }
}

/// `POST /albums/{id}/move`: `{"index": 3}` (within the library) or
/// `{"library": "jazz", "index": 0}` (to another library; index optional: the end).
public struct MoveRequest: Sendable, Equatable {
    /// The target library; nil for a move within the album's library.
    public var library: LibraryID?
    /// The target position; nil only with `library` (append).
    public var index: Int?

    /// - Throws: `.malformed` for syntax, `.invalid` for a bad or missing field (`index` is
    ///   required without `library`), `.indexOutOfRange` for a negative index.
    public static func decode(json bytes: [UInt8]) throws(LibraryError) -> MoveRequest {
        let object = try LibraryError.reading { () throws(BodyError) in try JSONObjectParser.object(from: bytes, what: "the request body", example: #"{"library": "jazz", "index": 0}"#) }
        var reader = JSONFieldReader(object)
        reader.rejectUnknownKeys(known: ["index", "library"])
        var index: Int?
        if let value = reader.nonNullValue("index", expected: IntegerRules.wholeNumber(IntegerRules.positions)) {
            index = reader.position("index", value)
        }
        var library: LibraryID?
        if let value = reader.nonNullValue("library", expected: "a library id like \"jazz\""),
            let text = reader.string("library", value, hint: "a library id like \"jazz\"")
        {
            library = reader.libraryID("library", text)
        }
        if library == nil, index == nil, reader.errors.isEmpty {
            reader.fail("index", "is required: the target position, as in {\"index\": 0} (or name a \"library\" to move the album to)")
        }
        guard reader.errors.isEmpty else { throw .invalid(ValidationFailure(reader.errors)) }
        if let index, index < 0 { throw .indexOutOfRange(index: index, count: 0) }
        return MoveRequest(library: library, index: index)
    }
}

extension JSONFieldReader {
    /// The optional `name` of a library or view: trimmed, 1 to 200 characters (nil when absent
    /// or after recording an error).
    mutating func catalogName() -> String? {
        guard let value = nonNullValue("name", expected: "a string of 1 to \(CatalogName.maxNameLength) characters"),
              let text = string("name", value, hint: "a string") else { return nil }
        let trimmed = AlbumFieldRules.trimmed(text)
        guard !trimmed.isEmpty, trimmed.count <= CatalogName.maxNameLength else {
            fail("name", "must be 1 to \(CatalogName.maxNameLength) characters after trimming spaces")
            return nil
        }
        return trimmed
    }

    /// `text` as a library id, or nil after recording why it is not one on `key`.
    mutating func libraryID(_ key: String, _ text: String) -> LibraryID? {
        if let reason = CatalogName.problem(text) {
            fail(key, "is not a valid library id: \(reason)")
            return nil
        }
        return LibraryID(rawValue: text)
    }
}
