import BlueLibraryAPI

/// The order of a paged album list: a field, ascending or descending, ties broken by album id
/// (in the same direction), so every order is total and keyset paging never skips or repeats.
public struct AlbumSort: Sendable, Hashable, CustomStringConvertible {
    public enum Field: String, Sendable, CaseIterable {
        /// The library's own order (the tutorial's list); the default.
        case position
        case title
        case artist
        /// By the genre's sort key (`SortText.key`, as the title's).
        case genre
        case year
        case createdAt
        /// How well each album matches the search (`SearchQuery.rank`), best first: the default
        /// when the list has `q`, and only with `q`.
        case relevance
    }

    public var field: Field
    public var descending: Bool
    /// For `.relevance`: the search whose rank orders (`AlbumQuery` sets it from its filter's
    /// `q`); without one every album ranks alike, so the order is by id.
    public var search: SearchQuery?

    public init(_ field: Field, descending: Bool = false, search: SearchQuery? = nil) {
        self.field = field
        self.descending = descending
        self.search = search
    }

    public static let position = AlbumSort(.position)

    /// `title`, `-year`, ... as in `?sort=`.
    public var description: String { (descending ? "-" : "") + field.rawValue }

    /// Parses `?sort=`: a field name, `-` in front for descending.
    /// - Throws: `.invalid` naming `sort` and listing the fields.
    public static func parse(_ text: String) throws(LibraryError) -> AlbumSort {
        let descending = text.hasPrefix("-")
        let name = descending ? String(text.dropFirst()) : text
        guard let field = Field(rawValue: name) else {
            let names = Field.allCases.map(\.rawValue).joined(separator: ", ")
            throw .invalid(ValidationFailure([FieldError(
                field: "sort", message: "sort must be one of \(names), with - in front for descending (got \"\(text)\")")]))
        }
        return AlbumSort(field, descending: descending)
    }
}

extension AlbumSort {
    /// Whether `a` comes before `b` in this value order, an artist's key made with
    /// `articles`: the reference every store implements (sort keys compared as UTF-8 bytes, as
    /// SQLite's BINARY and PostgreSQL's `COLLATE "C"` compare them). Not for `.position`, whose
    /// order is the library's.
    public func orders(_ a: Album, before b: Album, articles: SortArticles = .standard) -> Bool {
        guard let x = SortKey.of(a, for: field, articles: articles, search: search),
            let y = SortKey.of(b, for: field, articles: articles, search: search)
        else { return false }
        return orders(x, before: y)
    }

    /// Whether the key `a` comes before the key `b` in this value order (ties by id).
    public func orders(_ a: SortKey, before b: SortKey) -> Bool {
        let comparison: Int
        switch (a.value, b.value) {
        case let (.text(x), .text(y)): comparison = x == y ? 0 : (x.utf8.lexicographicallyPrecedes(y.utf8) ? -1 : 1)
        case let (.integer(x), .integer(y)): comparison = x < y ? -1 : (x > y ? 1 : 0)
        // SQLite orders every integer before every text.
        case (.integer, .text): comparison = -1
        case (.text, .integer): comparison = 1
        }
        let ordered = comparison != 0 ? comparison < 0 : a.id.rawValue.utf8.lexicographicallyPrecedes(b.id.rawValue.utf8)
        return descending ? !ordered && a.id != b.id : ordered
    }
}
