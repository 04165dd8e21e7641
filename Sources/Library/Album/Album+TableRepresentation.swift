/// The table view of an album: parallel row titles and values.
///
/// The tutorial's `tr_tableRepresentation` category (a decorator): kept out of `Album` itself
/// so the model does not grow a presentation concern. Row order is fixed — artist, album
/// (title), genre, year — because clients zip `titles` with `values` by position.
public struct AlbumTable: Sendable, Equatable, Codable {
    public var titles: [String]
    public var values: [String]

    /// The row titles, in order (the translation lost the tutorial's labels; these are ours).
    public static let rowTitles = ["Artist", "Album", "Genre", "Year"]

    public init(titles: [String], values: [String]) {
        self.titles = titles
        self.values = values
    }
}

extension Album {
    /// The album as table rows: `{"titles":["Artist","Album","Genre","Year"],
    /// "values":[artist, title, genre, year]}`; an absent year is the empty string, so both
    /// arrays always have four strings.
    public var tableRepresentation: AlbumTable {
        AlbumTable(
            titles: AlbumTable.rowTitles,
            values: [artist, title, genre, year.map(String.init) ?? ""])
    }
}
