extension AlbumInput {
    public static let example = #"{"title": "Best of Bowie", "artist": "David Bowie", "year": 1992}"#

    /// Decodes and validates a request body.
    ///
    /// Rules: `title` and `artist` are required; `genre`, `year` and `coverUrl` may be absent
    /// or `null`; `year` may be an integer or a 4-digit string. Unknown keys are rejected
    /// (with a "did you mean" hint) because silently ignoring `titel` would store an album
    /// without the title the user typed.
    ///
    /// - Throws: `BodyError.malformed` for bad JSON syntax or a non-object body;
    ///   `BodyError.invalid` listing every bad field.
    public static func decode(json bytes: [UInt8]) throws(BodyError) -> AlbumInput {
        let object = try JSONObjectParser.object(from: bytes, what: "the request body", example: example)
        var reader = JSONFieldReader(object)
        reader.rejectUnknownKeys(known: fieldNames, readOnly: serverFieldNames)
        let input = read(from: &reader)
        guard reader.errors.isEmpty, let input else { throw .invalid(ValidationFailure(reader.errors)) }
        return input
    }

    /// Reads the five fields from `reader`, recording problems in it; `nil` if any field is bad.
    public static func read(from reader: inout JSONFieldReader) -> AlbumInput? {
        let title = required("title", &reader)
        let artist = required("artist", &reader)
        var genre: String? = AlbumFieldLimits.defaultGenre
        if case .value(let value) = reader.field("genre") {
            genre = AlbumFieldRules.text("genre", value, reader: &reader)
        }
        var year: Int?
        if case .value(let value) = reader.field("year") {
            year = AlbumFieldRules.year("year", value, reader: &reader)
        }
        var coverUrl: String?
        if case .value(let value) = reader.field("coverUrl") {
            coverUrl = AlbumFieldRules.coverURL("coverUrl", value, reader: &reader)
        }
        guard reader.errors.isEmpty, let title, let artist, let genre else { return nil }
        return AlbumInput(validTitle: title, artist: artist, genre: genre, year: year, coverUrl: coverUrl)
    }

    private static func required(_ key: String, _ reader: inout JSONFieldReader) -> String? {
        switch reader.field(key) {
        case .absent:
            reader.fail(key, "is required; send a non-empty string")
            return nil
        case .null:
            reader.fail(key, "is required and cannot be null; send a non-empty string")
            return nil
        case .value(let value):
            return AlbumFieldRules.text(key, value, reader: &reader)
        }
    }
}
