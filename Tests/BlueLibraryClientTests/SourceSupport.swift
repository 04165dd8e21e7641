import BlueLibraryClient

/// What the library and view tests do again and again, on the client they test with.
extension BlueLibraryClient {
    /// Adds albums titled `titles` (artist "Band", genre "Jazz") at the end of `library`.
    @discardableResult
    func addAlbums(_ titles: [String], to library: String) async throws -> [AlbumResource] {
        var added: [AlbumResource] = []
        for title in titles { added.append(try await add(AlbumInput(title: title, artist: "Band", genre: "Jazz"), in: .library(library))) }
        return added
    }

    /// Every album of `source`, page by page with cursors.
    func walk(_ source: AlbumListSource, limit: Int, sort: AlbumSort? = nil) async throws -> [AlbumResource] {
        var query = AlbumPageQuery(limit: limit, sort: sort)
        var albums: [AlbumResource] = []
        while true {
            let page = try await list(query, in: source)
            albums += page.items
            guard let next = page.next else { return albums }
            query = query.continuing(at: next)
        }
    }
}
