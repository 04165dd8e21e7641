extension AlbumPatch {
    /// Decodes and validates a merge-patch body (`application/merge-patch+json`).
    ///
    /// Each present field is checked with the same rules as on create; all problems are
    /// reported together. RFC 7396 lets a non-object patch replace the whole target; for an
    /// album that is never meaningful, so it is rejected as malformed.
    ///
    /// - Throws: `BodyError.malformed` for bad syntax or a non-object body;
    ///   `BodyError.invalid` listing every bad field, unknown key and forbidden `null`.
    public static func decode(json bytes: [UInt8]) throws(BodyError) -> AlbumPatch {
        let object = try JSONObjectParser.object(
            from: bytes, what: "the merge patch", example: #"{"year": 1993, "coverUrl": null}"#)
        var reader = JSONFieldReader(object)
        let patch = read(from: &reader)
        guard reader.errors.isEmpty else { throw .invalid(ValidationFailure(reader.errors)) }
        return patch
    }

    /// Reads a merge patch's fields from `reader` (unknown keys refused), recording problems in
    /// it; the patch is meaningful only when `reader` recorded none.
    public static func read(from reader: inout JSONFieldReader) -> AlbumPatch {
        reader.rejectUnknownKeys(known: AlbumInput.fieldNames, readOnly: AlbumInput.serverFieldNames)
        var patch = AlbumPatch()
        patch.title = requiredText("title", &reader)
        patch.artist = requiredText("artist", &reader)
        patch.genre = optional("genre", &reader) { AlbumFieldRules.text("genre", $0, reader: &$1) }
        patch.year = optional("year", &reader) { AlbumFieldRules.year("year", $0, reader: &$1) }
        patch.coverUrl = optional("coverUrl", &reader) { AlbumFieldRules.coverURL("coverUrl", $0, reader: &$1) }
        return patch
    }

    private static func requiredText(_ key: String, _ reader: inout JSONFieldReader) -> PatchField<String> {
        switch reader.field(key) {
        case .absent:
            return .unchanged
        case .null:
            reader.fail(key, "cannot be removed (null); send a new non-empty string or leave it out")
            return .unchanged
        case .value(let value):
            return AlbumFieldRules.text(key, value, reader: &reader).map { .set($0) } ?? .unchanged
        }
    }

    private static func optional<Value>(
        _ key: String, _ reader: inout JSONFieldReader,
        _ check: (JSONFieldValue, inout JSONFieldReader) -> Value?
    ) -> PatchField<Value> {
        switch reader.field(key) {
        case .absent: return .unchanged
        case .null: return .remove
        case .value(let value): return check(value, &reader).map { .set($0) } ?? .unchanged
        }
    }
}
