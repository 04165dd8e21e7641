import BlueLibraryAPI

extension Album {
    /// Appends the album's JSON object to `buffer`: the wire module's encoder (`AlbumJSON`), the
    /// same keys, order and values as its `Codable` form.
    public func appendJSON(to buffer: inout [UInt8]) {
        AlbumJSON.append(
            id: id.rawValue, title: title, artist: artist, genre: genre, year: year, coverUrl: coverUrl,
            createdAt: createdAt, updatedAt: updatedAt, to: &buffer)
    }
}
