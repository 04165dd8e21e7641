/// The albums of an imported CSV file, all valid, and the columns it ignored.
public struct AlbumCSVImport: Sendable, Equatable {
    /// One per data row, in file order.
    public var albums: [AlbumInput]
    /// The header names of the columns that set no field (as written, trimmed), in header
    /// order: the server's own (`id`, `index`, `createdAt`, `updatedAt`) and unknown ones.
    public var ignoredColumns: [String]

    public init(albums: [AlbumInput], ignoredColumns: [String]) {
        self.albums = albums
        self.ignoredColumns = ignoredColumns
    }
}

extension AlbumCSV {
    /// The most problems an import reports (see `CSVImportFailure`).
    public static let maximumImportErrors = 100

    /// Reads albums from a CSV file (see `CSVReader` for the syntax): a header row, then one
    /// album per row. All or nothing: either every row is a valid album, or nothing is taken
    /// and every problem is reported (up to `maximumImportErrors`).
    ///
    /// Header: see `AlbumCSVColumns` — columns are matched by name without regard to case or
    /// surrounding whitespace, in any order; `title` and `artist` are required; the server's
    /// columns and unknown ones are ignored and listed in `ignoredColumns`. Empty rows before
    /// the header are skipped.
    ///
    /// Rows: each row is checked by `AlbumInput`'s rules, so a CSV album is valid exactly when
    /// the same album sent as JSON is. An empty (or all-blank) `genre`, `year` or `coverUrl`
    /// cell means the field is not given (genre "Pop", no year, no cover). The year cell is read
    /// by `AlbumCSVCells.year` (`1977`, `1977-05-13`, `1977-00-00`; empty, `0` or `Unknown` for
    /// none). In a Discogs file (one with a `release_id` column) the artist loses Discogs's
    /// number (`Nirvana (2)` → `Nirvana`); in other files it is kept as written.
    ///
    /// Row shape: a row with fewer cells than the header has its missing cells read as empty
    /// (spreadsheets drop trailing empty cells). A row with more cells is an error, unless the
    /// extra cells are all empty (spreadsheets also pad rows with separators): a non-empty extra
    /// cell usually means an unquoted comma split a field, and taking the row would shift its
    /// fields. A row whose cells are all empty or blank is skipped.
    ///
    /// - Throws: `CSVImportFailure` listing every problem in file order: a header problem on
    ///   the header's line; a bad cell on its row's line, naming its column; a syntax error,
    ///   after which the rest of the file cannot be read.
    public static func importAlbums(from bytes: [UInt8]) throws(CSVImportFailure) -> AlbumCSVImport {
        var reader = CSVReader(bytes)
        var header: CSVRecord?
        do {
            while header == nil, let record = try reader.next() {
                if !isBlank(record) { header = record }
            }
        } catch {
            throw CSVImportFailure(errors: [CSVImportError(error)])
        }
        guard let header else {
            throw CSVImportFailure(errors: [CSVImportError(
                line: 1, column: nil, message: "the file has no rows; its first line must name the columns, with title and artist among them")])
        }
        let columns = try AlbumCSVColumns(header: header)
        var albums: [AlbumInput] = []
        var errors = ErrorList()
        while !errors.isFull {
            let record: CSVRecord
            do {
                guard let next = try reader.next() else { break }
                record = next
            } catch {
                errors.append(CSVImportError(error))
                break
            }
            if isBlank(record) { continue }
            switch album(record, columns) {
            case .success(let album):
                // Once the import has failed, its albums are only a cost.
                if errors.list.isEmpty { albums.append(album) }
            case .failure(let rowErrors):
                for error in rowErrors.list { errors.append(error) }
            }
        }
        guard errors.list.isEmpty else {
            throw CSVImportFailure(errors: errors.list, hasMoreErrors: errors.overflowed)
        }
        return AlbumCSVImport(albums: albums, ignoredColumns: columns.ignored)
    }

    /// The album of one data row, or its problems (the shape first, then each field's).
    private static func album(_ record: CSVRecord, _ columns: AlbumCSVColumns) -> Result<AlbumInput, RowErrors> {
        let fields = record.fields
        if fields.count > columns.names.count, !fields[columns.names.count...].allSatisfy(isBlank) {
            return .failure(RowErrors([CSVImportError(
                line: record.line, column: nil,
                message: "the row has \(fields.count) cells but the header has \(columns.names.count) columns;"
                    + " enclose a cell that holds a comma in double quotes")]))
        }
        func cell(_ field: AlbumCSVColumns.Field) -> String? {
            guard let column = columns[field], column < fields.count else { return nil }
            return fields[column]
        }
        /// An optional field's cell; blank is not given.
        func given(_ field: AlbumCSVColumns.Field) -> String? {
            cell(field).flatMap { isBlank($0) ? nil : $0 }
        }
        var errors: [CSVImportError] = []
        var year: Int?
        if let yearCell = cell(.year), let column = columns[.year] {
            switch AlbumCSVCells.year(yearCell) {
            case .none: break
            case .year(let value): year = value
            case .invalid:
                let name = columns.names[column]
                errors.append(CSVImportError(
                    line: record.line, column: name, message: "\(name) \(AlbumCSVCells.yearMessage) (got \"\(yearCell)\")"))
            }
        }
        var artist = cell(.artist) ?? ""
        if columns.isDiscogs { artist = AlbumCSVCells.withoutDiscogsNumber(artist) }
        do {
            let album = try AlbumInput(
                title: cell(.title) ?? "", artist: artist, genre: given(.genre), year: year, coverUrl: given(.coverUrl))
            if errors.isEmpty { return .success(album) }
        } catch {
            errors += error.errors.map { cellError($0, line: record.line, columns) }
            // In header order, as the user reads the row.
            let position = { (error: CSVImportError) in error.column.flatMap(columns.names.firstIndex) ?? 0 }
            errors.sort { position($0) < position($1) }
        }
        return .failure(RowErrors(errors))
    }

    /// `error` of `AlbumInput` as a problem of its column: the message names the column as the
    /// header does (`Title must…` for Discogs's `Title`).
    private static func cellError(_ error: FieldError, line: Int, _ columns: AlbumCSVColumns) -> CSVImportError {
        guard let column = columns.column(ofInputField: error.field) else {
            return CSVImportError(line: line, column: nil, message: error.message)
        }
        let name = columns.names[column]
        let prefix = error.field + " "
        let message = error.message.hasPrefix(prefix) ? name + " " + error.message.dropFirst(prefix.count) : error.message
        return CSVImportError(line: line, column: name, message: message)
    }

    private static func isBlank(_ record: CSVRecord) -> Bool {
        record.fields.allSatisfy(isBlank)
    }

    private static func isBlank(_ cell: String) -> Bool {
        cell.isEmpty || AlbumFieldRules.trimmed(cell).isEmpty
    }

    /// A row's problems (a `Result` needs an `Error`).
    private struct RowErrors: Error {
        var list: [CSVImportError]
        init(_ list: [CSVImportError]) { self.list = list }
    }

    /// The problems found so far, up to `maximumImportErrors`.
    private struct ErrorList {
        private(set) var list: [CSVImportError] = []
        /// Whether a problem was dropped for the limit.
        private(set) var overflowed = false

        var isFull: Bool { overflowed }

        mutating func append(_ error: CSVImportError) {
            if list.count < maximumImportErrors {
                list.append(error)
            } else {
                overflowed = true
            }
        }
    }
}
