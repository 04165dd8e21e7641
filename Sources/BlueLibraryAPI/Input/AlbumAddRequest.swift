/// A create request whose body may also carry the position: `{"title": ..., "index": 0}`.
///
/// Used by `POST /api/addAlbum` (the tutorial app's `addAlbum:atIndex:` call) and by
/// `POST /albums` when the index comes in the body rather than the query.
public struct AlbumAddRequest: Sendable, Equatable {
    public var input: AlbumInput
    /// The requested position, if any; resolved by `InsertionIndex.resolve`.
    public var index: Int?

    public init(input: AlbumInput, index: Int?) {
        self.input = input
        self.index = index
    }

    /// Decodes and validates an album plus an optional integer `index`.
    ///
    /// - Throws: `BodyError.malformed` for bad syntax; `BodyError.invalid` for bad fields.
    public static func decode(json bytes: [UInt8]) throws(BodyError) -> AlbumAddRequest {
        let object = try JSONObjectParser.object(
            from: bytes, what: "the request body", example: #"{"title": "Best of Bowie", "artist": "David Bowie", "index": 0}"#)
        var reader = JSONFieldReader(object)
        reader.rejectUnknownKeys(
            known: AlbumInput.fieldNames + ["index"],
            readOnly: AlbumInput.serverFieldNames.filter { $0 != "index" })
        var index: Int?
        if case .value(let value) = reader.field("index") {
            index = reader.position("index", value)
        }
        let input = AlbumInput.read(from: &reader)
        guard reader.errors.isEmpty, let input else { throw .invalid(ValidationFailure(reader.errors)) }
        return AlbumAddRequest(input: input, index: index)
    }
}
