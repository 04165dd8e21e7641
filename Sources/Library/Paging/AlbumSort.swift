import BlueLibraryAPI

/// The order of a paged album list: a field, ascending or descending, ties broken by album id
/// (in the same direction), so every order is total and keyset paging never skips or repeats.
public struct AlbumSort: Sendable, Hashable, CustomStringConvertible {
    public enum Field: String, Sendable, CaseIterable {
        /// The library's own order (the tutorial's list); the default.
        case position
        case title
        case artist
        case year
        case createdAt
    }

    public var field: Field
    public var descending: Bool

    public init(_ field: Field, descending: Bool = false) {
        self.field = field
        self.descending = descending
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
    /// Whether `a` comes before `b` in this value order: the reference every store
    /// implements (SQLite's `COLLATE NOCASE` compares UTF-8 bytes with ASCII letters folded,
    /// so this does too). Not for `.position`, whose order is the library's.
    public func orders(_ a: Album, before b: Album) -> Bool {
        let comparison: Int
        switch (SortValue.of(a, for: field), SortValue.of(b, for: field)) {
        case let (.text(x)?, .text(y)?): comparison = Self.compareFolded(x, y)
        case let (.integer(x)?, .integer(y)?): comparison = x < y ? -1 : (x > y ? 1 : 0)
        default: comparison = 0
        }
        let ordered = comparison != 0 ? comparison < 0 : a.id.rawValue.utf8.lexicographicallyPrecedes(b.id.rawValue.utf8)
        return descending ? !ordered && a.id != b.id : ordered
    }

    static func compareFolded(_ x: String, _ y: String) -> Int {
        func fold(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }
        var i = x.utf8.makeIterator()
        var j = y.utf8.makeIterator()
        while true {
            switch (i.next().map(fold), j.next().map(fold)) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case let (p?, q?) where p != q: return p < q ? -1 : 1
            default: continue
            }
        }
    }
}
