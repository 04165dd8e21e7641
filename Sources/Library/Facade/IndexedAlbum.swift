/// An album together with its current position in the library.
///
/// Encodes flat — the album's fields plus `"index"` — which is how `GET /albums/{id}` shows it.
public struct IndexedAlbum: Sendable, Equatable, Encodable {
    public var album: Album
    public var index: Int

    public init(album: Album, index: Int) {
        self.album = album
        self.index = index
    }

    private enum CodingKeys: String, CodingKey {
        case index
    }

    public func encode(to encoder: any Encoder) throws {
        try album.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(index, forKey: .index)
    }
}
