import Foundation

/// The body of `PUT /state`: `{"currentAlbumIndex": 2}` or `{"albumID": "01J..."}` (the album
/// to make current; `albumId` is accepted too).
public enum StateRequest: Sendable, Equatable {
    case index(Int)
    case album(AlbumID)

    /// - Throws: `.malformed` for syntax; `.invalid` naming the field for anything else.
    public static func decode(json bytes: [UInt8]) throws(LibraryError) -> StateRequest {
        let object = try JSONObjectParser.object(
            from: bytes, what: "the request body", example: #"{"currentAlbumIndex": 2}"#)
        var reader = JSONFieldReader(object)
        reader.rejectUnknownKeys(known: ["currentAlbumIndex", "albumID", "albumId"], readOnly: ["client", "updatedAt"])
        var result: StateRequest?
        if case .value(let value) = reader.field("currentAlbumIndex") {
            if let index = value.integer, index >= 0 {
                result = .index(index)
            } else {
                reader.fail("currentAlbumIndex", "must be an integer position starting at 0 (got \(value.kindDescription))")
            }
        }
        for key in ["albumID", "albumId"] {
            guard case .value(let value) = reader.field(key) else { continue }
            if let text = value.string, let id = AlbumID(text) {
                if result != nil {
                    reader.fail(key, "send either currentAlbumIndex or \(key), not both")
                } else {
                    result = .album(id)
                }
            } else {
                reader.fail(key, "must be an album id string like 01HZY8Q6V9T3X2K7M4N5P6R7S8")
            }
        }
        guard reader.errors.isEmpty else { throw .invalid(ValidationFailure(reader.errors)) }
        guard let result else {
            throw .invalid(ValidationFailure([FieldError(field: "currentAlbumIndex", message: "currentAlbumIndex (or albumID) is required")]))
        }
        return result
    }
}
