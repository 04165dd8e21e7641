import BlueLibraryAPI
import Library
import Foundation

/// The body of `PUT /state`: `{"currentAlbumIndex": 2}` or `{"albumID": "01J..."}` (the album
/// to make current; `albumId` is accepted too).
public enum StateRequest: Sendable, Equatable {
    case index(Int)
    case album(AlbumID)

    /// - Throws: `.malformed` for syntax; `.invalid` naming the field for anything else (also
    ///   for `null`: no field of this body is nullable).
    public static func decode(json bytes: [UInt8]) throws(LibraryError) -> StateRequest {
        let object = try LibraryError.reading { () throws(BodyError) in try JSONObjectParser.object(
            from: bytes, what: "the request body", example: #"{"currentAlbumIndex": 2}"#) }
        var reader = JSONFieldReader(object)
        reader.rejectUnknownKeys(known: ["currentAlbumIndex", "albumID", "albumId"], readOnly: ["client", "updatedAt"])
        var result: StateRequest?
        if let value = reader.nonNullValue("currentAlbumIndex", expected: IntegerRules.wholeNumber(IntegerRules.positions)),
           let index = reader.integer("currentAlbumIndex", value, in: IntegerRules.positions) {
            result = .index(index)
        }
        for key in ["albumID", "albumId"] {
            guard let value = reader.nonNullValue(key, expected: "an album id string like 01HZY8Q6V9T3X2K7M4N5P6R7S8") else { continue }
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
