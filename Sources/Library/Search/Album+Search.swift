import BlueLibraryAPI

extension SearchText {
    /// The stored `search_text` of `album`.
    public static func document(_ album: Album) -> String {
        document(title: album.title, artist: album.artist, genre: album.genre)
    }
}

extension SearchQuery {
    /// Whether `album` matches.
    public func matches(_ album: Album) -> Bool {
        matches(document: SearchText.document(album))
    }
}

extension SearchQuery {
    /// How well `album` matches (`rank(document:)`).
    public func rank(_ album: Album) -> Int {
        rank(document: SearchText.document(album))
    }
}
