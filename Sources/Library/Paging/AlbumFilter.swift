import BlueLibraryAPI

/// Which albums a list shows. Every condition is optional; all given ones must hold.
public struct AlbumFilter: Sendable, Hashable {
    /// A search (`q`, see `SearchQuery`): every word in the title, artist or genre, folded
    /// (case, accents, any script), the last one as the start of a word.
    public var text: String?
    /// The artist, exactly (case-insensitive).
    public var artist: String?
    /// The genre, exactly (case-insensitive).
    public var genre: String?
    /// Albums from this year on (albums without a year are left out).
    public var yearFrom: Int?
    /// Albums up to this year (albums without a year are left out).
    public var yearTo: Int?

    public init(text: String? = nil, artist: String? = nil, genre: String? = nil, yearFrom: Int? = nil, yearTo: Int? = nil) {
        self.text = text
        self.artist = artist
        self.genre = genre
        self.yearFrom = yearFrom
        self.yearTo = yearTo
    }

    public static let all = AlbumFilter()

    public var isEmpty: Bool { self == .all }

    /// Whether `album` passes, by the same rules the store applies in SQL (the reference the
    /// tests compare the store against).
    ///
    /// `artist` and `genre` are compared as UTF-8 bytes with only the ASCII letters
    /// case-folded, exactly like SQLite's `COLLATE NOCASE`; `text` as a `SearchQuery` against
    /// the album's `SearchText.document` (a text with no word to search for matches nothing).
    public func matches(_ album: Album) -> Bool {
        if let text, !text.isEmpty {
            guard let query = SearchQuery(text), query.matches(album) else { return false }
        }
        if let artist, Self.folded(album.artist) != Self.folded(artist) { return false }
        if let genre, Self.folded(album.genre) != Self.folded(genre) { return false }
        if let yearFrom { guard let year = album.year, year >= yearFrom else { return false } }
        if let yearTo { guard let year = album.year, year <= yearTo else { return false } }
        return true
    }

    /// Checks the values (`yearFrom <= yearTo`, lengths, no U+0000 in a text).
    /// - Throws: `.invalid` naming each bad parameter.
    public func validated() throws(LibraryError) -> AlbumFilter {
        var errors: [FieldError] = []
        for (name, value) in [("q", text), ("artist", artist), ("genre", genre)] {
            if let value, AlbumFieldRules.containsNUL(value) {
                errors.append(FieldError(field: name, message: "\(name) \(AlbumFieldRules.nulMessage)"))
            } else if let value, value.count > CatalogLimits.filterTextLength {
                errors.append(FieldError(field: name, message: "\(name) must be at most \(CatalogLimits.filterTextLength) characters"))
            }
        }
        if let text, !text.isEmpty, !AlbumFieldRules.containsNUL(text), SearchQuery(text) == nil {
            errors.append(FieldError(
                field: "q", message: "q has no letter or digit to search for (got \"\(text.prefix(40))\"); send a word, or leave q out"))
        }
        if let yearFrom, let yearTo, yearFrom > yearTo {
            errors.append(FieldError(field: "yearFrom", message: "yearFrom (\(yearFrom)) must not be after yearTo (\(yearTo))"))
        }
        guard errors.isEmpty else { throw .invalid(ValidationFailure(errors)) }
        return self
    }

    /// A canonical text of the filter, for cursors and cache keys.
    var canonical: String {
        [text.map { "q=\($0)" }, artist.map { "artist=\($0.lowercased())" }, genre.map { "genre=\($0.lowercased())" },
         yearFrom.map { "yearFrom=\($0)" }, yearTo.map { "yearTo=\($0)" }]
            .compactMap { $0 }.joined(separator: "&")
    }
}

extension AlbumFilter {
    /// The UTF-8 bytes of `text` with ASCII letters lowercased (SQLite's case folding).
    static func folded(_ text: String) -> [UInt8] {
        text.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
    }
}
