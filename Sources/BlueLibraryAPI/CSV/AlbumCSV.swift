import Essentials

/// Albums as CSV rows: the export's header and rows, written into a caller's buffer.
///
/// Every album is one row of the columns in `header`, in that order. Text fields are text
/// cells (so a title like `=SUM(1)` is written `'=SUM(1)`, see `CSVWriter`); `index` and `year`
/// are number cells; an absent index, year or cover is an empty cell. `importAlbums(from:)`
/// reads such a file back, ignoring the columns the server sets.
public enum AlbumCSV {
    /// The export's columns, in order: the album object's fields, with `index` after `id`.
    public static let header = ["id", "index", "title", "artist", "genre", "year", "coverUrl", "createdAt", "updatedAt"]

    /// `header` as one CSV row, CRLF included (the names need no quoting).
    private static let headerRow: [UInt8] = Array((header.joined(separator: ",") + "\r\n").utf8)

    /// Appends the header row.
    public static func appendHeader(to buffer: inout [UInt8]) {
        buffer.append(contentsOf: headerRow)
    }

    /// Appends `album` as one row, CRLF included (`library` is not a column).
    public static func appendRow(_ album: AlbumResource, to buffer: inout [UInt8]) {
        appendRow(
            id: album.id, index: album.index, title: album.title, artist: album.artist, genre: album.genre,
            year: album.year, coverUrl: album.coverUrl, createdAt: album.createdAt, updatedAt: album.updatedAt,
            to: &buffer)
    }

    /// Appends one row of the given fields, CRLF included; `createdAt` and `updatedAt` are
    /// written as given (text cells).
    public static func appendRow(
        id: String, index: Int?, title: String, artist: String, genre: String, year: Int?, coverUrl: String?,
        createdAt: String, updatedAt: String, to buffer: inout [UInt8]
    ) {
        appendFields(id: id, index: index, title: title, artist: artist, genre: genre, year: year, coverUrl: coverUrl, to: &buffer)
        buffer.append(CSVWriter.separator)
        CSVWriter.appendText(createdAt, to: &buffer)
        buffer.append(CSVWriter.separator)
        CSVWriter.appendText(updatedAt, to: &buffer)
        CSVWriter.appendLineEnd(to: &buffer)
    }

    /// Appends one row with the dates given as milliseconds since 1970, written as
    /// `Timestamp.format` writes them (`2024-05-01T12:34:56.789Z`) without making a String.
    public static func appendRow(
        id: String, index: Int?, title: String, artist: String, genre: String, year: Int?, coverUrl: String?,
        createdAtMilliseconds: Int64, updatedAtMilliseconds: Int64, to buffer: inout [UInt8]
    ) {
        appendFields(id: id, index: index, title: title, artist: artist, genre: genre, year: year, coverUrl: coverUrl, to: &buffer)
        // A timestamp is digits, `-`, `:`, `T`, `.` and `Z` from a four-digit year on: never
        // quoted, never taken for a formula.
        buffer.append(CSVWriter.separator)
        Timestamp.append(milliseconds: createdAtMilliseconds, to: &buffer)
        buffer.append(CSVWriter.separator)
        Timestamp.append(milliseconds: updatedAtMilliseconds, to: &buffer)
        CSVWriter.appendLineEnd(to: &buffer)
    }

    /// The row's cells up to `coverUrl`.
    private static func appendFields(
        id: String, index: Int?, title: String, artist: String, genre: String, year: Int?, coverUrl: String?,
        to buffer: inout [UInt8]
    ) {
        CSVWriter.appendText(id, to: &buffer)
        buffer.append(CSVWriter.separator)
        if let index { CSVWriter.appendNumber(index, to: &buffer) }
        buffer.append(CSVWriter.separator)
        CSVWriter.appendText(title, to: &buffer)
        buffer.append(CSVWriter.separator)
        CSVWriter.appendText(artist, to: &buffer)
        buffer.append(CSVWriter.separator)
        CSVWriter.appendText(genre, to: &buffer)
        buffer.append(CSVWriter.separator)
        if let year { CSVWriter.appendNumber(year, to: &buffer) }
        buffer.append(CSVWriter.separator)
        if let coverUrl { CSVWriter.appendText(coverUrl, to: &buffer) }
    }
}
