/// The user-editable fields of an album, validated: what `POST /albums` sends.
///
/// An `AlbumInput` value is always valid — the only ways to get one check every rule in
/// `AlbumFieldRules` (the throwing initializer, `decode(json:)`, `AlbumPatch.applied`), so the
/// facade never has to re-check.
public struct AlbumInput: Sendable, Equatable, Hashable {
    /// Trimmed, 1…500 characters.
    public let title: String
    /// Trimmed, 1…500 characters.
    public let artist: String
    /// Trimmed, 1…500 characters; "Pop" when not given.
    public let genre: String
    /// 1000…9999, or `nil`.
    public let year: Int?
    /// An absolute http(s) URL of at most 2048 characters, or `nil`.
    public let coverUrl: String?

    /// The fields a request body may contain.
    public static let fieldNames = ["title", "artist", "genre", "year", "coverUrl"]
    /// Fields of an album the server sets; sending them is an error, not silently ignored.
    public static let serverFieldNames = ["id", "index", "createdAt", "updatedAt"]

    /// Validates and trims the fields, reporting every problem at once.
    ///
    /// - Throws: `ValidationFailure` listing each bad field.
    public init(title: String, artist: String, genre: String? = nil, year: Int? = nil, coverUrl: String? = nil)
        throws(ValidationFailure)
    {
        var reader = JSONFieldReader([:])
        let title = AlbumFieldRules.text("title", title, errors: &reader)
        let artist = AlbumFieldRules.text("artist", artist, errors: &reader)
        let genre = genre.map { AlbumFieldRules.text("genre", $0, errors: &reader) } ?? AlbumFieldLimits.defaultGenre
        let year = year.map { AlbumFieldRules.year("year", $0, reader: &reader) } ?? nil
        let coverUrl = coverUrl.map { AlbumFieldRules.coverURL("coverUrl", $0, reader: &reader) } ?? nil
        guard reader.errors.isEmpty, let title, let artist, let genre else {
            throw ValidationFailure(reader.errors)
        }
        self.init(validTitle: title, artist: artist, genre: genre, year: year, coverUrl: coverUrl)
    }

    /// For values already known to be valid (seed data, stored albums).
    public init(validTitle title: String, artist: String, genre: String, year: Int?, coverUrl: String?) {
        self.title = title
        self.artist = artist
        self.genre = genre
        self.year = year
        self.coverUrl = coverUrl
    }
}
