import BlueLibraryAPI

/// Which albums a list shows. Every condition is optional; all given ones must hold.
public struct AlbumFilter: Sendable, Hashable {
    /// Case-insensitive substring of the title or the artist.
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
    /// Text is compared as UTF-8 bytes with only the ASCII letters case-folded, exactly like
    /// SQLite's `LIKE` and `COLLATE NOCASE` (so "É" does not match "é", and differently
    /// normalised spellings of one accented letter differ).
    public func matches(_ album: Album) -> Bool {
        if let text, !text.isEmpty {
            let needle = Self.folded(text)
            guard Self.folded(album.title).containsBytes(needle) || Self.folded(album.artist).containsBytes(needle)
            else { return false }
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

extension [UInt8] {
    /// Whether `needle` occurs in these bytes (an empty needle always does).
    fileprivate func containsBytes(_ needle: [UInt8]) -> Bool {
        guard needle.count <= count else { return false }
        if needle.isEmpty { return true }
        outer: for start in 0...(count - needle.count) {
            for offset in 0..<needle.count where self[start + offset] != needle[offset] { continue outer }
            return true
        }
        return false
    }
}
