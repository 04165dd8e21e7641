/// How an import reads the cells that are not plain text: the year, and Discogs's artist names.
enum AlbumCSVCells {
    /// A year cell's meaning.
    enum Year: Equatable {
        /// Empty, `0` or `Unknown`: no year.
        case none
        case year(Int)
        /// Anything else.
        case invalid
    }

    /// What a bad year cell must be instead (after the column's name).
    static let yearMessage = "must be a year like 1992 or a date that starts with one like 1992-05-13, or empty"

    /// Reads a year cell, as BlueLibrary (`1977`) and Discogs (`1977`, `1977-05-13`,
    /// `1977-00-00` when only the year is known, empty, `0` or `Unknown` when none is) write it.
    ///
    /// Rule: four digits, alone or followed by `-` and the rest of a date (not checked: Discogs
    /// writes `00` for an unknown month or day), giving a year in `AlbumFieldRules.yearRange`;
    /// empty, `0` and `unknown` (any case) mean no year; anything else is an error rather than a
    /// guess (a `92` might be 1992 or 2092).
    static func year(_ cell: String) -> Year {
        let text = AlbumFieldRules.trimmed(cell)
        if text.isEmpty || text == "0" || text.lowercased() == "unknown" { return .none }
        let bytes = Array(text.utf8)
        guard bytes.count >= 4, bytes[..<4].allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              bytes.count == 4 || bytes[4] == UInt8(ascii: "-") else { return .invalid }
        let year = bytes[..<4].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        return AlbumFieldRules.yearRange.contains(year) ? .year(year) : .invalid
    }

    /// `artist` without the number Discogs adds to tell artists of one name apart: a trailing
    /// ` (n)` of decimal digits (`Nirvana (2)` → `Nirvana`). Other parentheses stay (`Sunn O)))`,
    /// `Crosby, Stills & Nash (CSN)`).
    static func withoutDiscogsNumber(_ artist: String) -> String {
        let text = AlbumFieldRules.trimmed(artist)
        let bytes = text.utf8
        guard bytes.last == UInt8(ascii: ")") else { return text }
        var index = bytes.index(before: bytes.endIndex)
        var digits = 0
        while index > bytes.startIndex {
            let before = bytes.index(before: index)
            guard bytes[before] >= UInt8(ascii: "0") && bytes[before] <= UInt8(ascii: "9") else { break }
            index = before
            digits += 1
        }
        // `index` is the first digit: "(" and " " must come before it.
        guard digits > 0, bytes.distance(from: bytes.startIndex, to: index) >= 3 else { return text }
        let open = bytes.index(before: index)
        let space = bytes.index(before: open)
        guard bytes[open] == UInt8(ascii: "("), bytes[space] == UInt8(ascii: " ") else { return text }
        return AlbumFieldRules.trimmed(String(text[..<space]))
    }
}
