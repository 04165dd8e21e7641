import BlueLibraryClient
import Library

@testable import BlueLibraryServer

extension LiveServer {
    /// A server whose change feed keeps only the last two changes (older `since` is 410).
    static func keepingTwoChanges() throws -> LiveServer {
        try LiveServer { $0.changeRetention = ChangeRetention(age: .zero, count: 2, prunePerWrite: 16) }
    }
}

/// The albums without the list-dependent `index` and `library`: what a replica and the server
/// must agree on.
func plainAlbums(_ albums: [AlbumResource]) -> [AlbumResource] {
    albums.map { album in
        var album = album
        album.index = nil
        album.library = nil
        return album
    }
}
