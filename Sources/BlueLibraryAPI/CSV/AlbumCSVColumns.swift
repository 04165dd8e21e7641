/// Which column of an import file gives which album field, read from its header row.
///
/// Rules: a header name is compared without surrounding whitespace and without regard to case.
/// `title`, `artist`, `genre`, `year` and `coverUrl` (also `cover_url` and `cover url`) give
/// their fields; Discogs's `Released` gives the year too. Every other column is ignored and
/// reported — the ones BlueLibrary's export writes but an import must not set (`id`, `index`,
/// `createdAt`, `updatedAt`: the server sets them) and the ones it does not know (Discogs's
/// `Catalog#`, `Label`, …) alike, so a file exported by the server or by Discogs imports as
/// it is. `title` and `artist` are required; two columns for one field (`year` and `Released`)
/// are refused, since neither could be said to win.
struct AlbumCSVColumns {
    /// The album fields a column can give.
    enum Field: CaseIterable {
        case title, artist, genre, year, coverUrl

        /// The header names (trimmed, lower-cased) that give this field.
        var names: [String] {
            switch self {
            case .title: ["title"]
            case .artist: ["artist"]
            case .genre: ["genre"]
            case .year: ["year", "released"]
            case .coverUrl: ["coverurl", "cover_url", "cover url"]
            }
        }

        /// The field's name in `AlbumInput`'s errors.
        var inputName: String {
            switch self {
            case .title: "title"
            case .artist: "artist"
            case .genre: "genre"
            case .year: "year"
            case .coverUrl: "coverUrl"
            }
        }
    }

    /// The header's names, trimmed, in order.
    let names: [String]
    /// Each field's column, when the header has one.
    private let columns: [Field: Int]
    /// The names of the columns no field takes, in header order.
    let ignored: [String]
    /// Whether the header is Discogs's collection export (it has a `release_id` column), whose
    /// artists carry a disambiguation number (`Nirvana (2)`).
    let isDiscogs: Bool

    /// The mapping of `header` (a record on line `header.line`).
    ///
    /// - Throws: every header problem (missing `title`/`artist` as one error, each field given
    ///   twice as one), all on the header's line.
    init(header: CSVRecord) throws(CSVImportFailure) {
        let names = header.fields.map { AlbumFieldRules.trimmed($0) }
        var columns: [Field: Int] = [:]
        var ignored: [String] = []
        var errors: [CSVImportError] = []
        for (index, name) in names.enumerated() {
            let key = name.lowercased()
            guard let field = Field.allCases.first(where: { $0.names.contains(key) }) else {
                ignored.append(name)
                continue
            }
            if let first = columns[field] {
                errors.append(CSVImportError(
                    line: header.line, column: name,
                    message: "the columns \"\(names[first])\" and \"\(name)\" both give the \(field.inputName); keep one"))
                continue
            }
            columns[field] = index
        }
        let missing = [Field.title, .artist].filter { columns[$0] == nil }.map(\.inputName)
        if !missing.isEmpty {
            let list = missing.map { "\"\($0)\"" }.joined(separator: " and ")
            let noun = missing.count == 1 ? "column" : "columns"
            errors.insert(
                CSVImportError(
                    line: header.line, column: nil,
                    message: "the header row has no \(list) \(noun); the first line must name the columns, with title and artist among them"),
                at: 0)
        }
        guard errors.isEmpty else { throw CSVImportFailure(errors: errors) }
        self.names = names
        self.columns = columns
        self.ignored = ignored
        self.isDiscogs = names.contains { $0.lowercased() == "release_id" }
    }

    /// The column of `field`, if the header has one.
    subscript(field: Field) -> Int? { columns[field] }

    /// The column that gives the `AlbumInput` field named `inputName`.
    func column(ofInputField inputName: String) -> Int? {
        Field.allCases.first { $0.inputName == inputName }.flatMap { columns[$0] }
    }
}
