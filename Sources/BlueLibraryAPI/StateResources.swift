import Foundation

/// `POST /undo`: what was undone, the album afterwards (nil when the undo removed it), the new version.
public struct UndoResultResource: Codable, Sendable, Hashable {
    public var undone: String
    public var album: AlbumResource?
    public var version: Int64

    enum CodingKeys: String, CodingKey { case undone, album, version }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(undone, forKey: .undone)
        try container.encode(album, forKey: .album)  // null, as the server sends it
        try container.encode(version, forKey: .version)
    }
}

/// `GET /undo`: the stack's depth and what the next undo would do.
public struct UndoStatusResource: Codable, Sendable, Hashable {
    public var depth: Int
    public var canUndo: Bool
    /// What the next undo would do; nil when there is nothing to undo.
    public var next: String?

    enum CodingKeys: String, CodingKey { case depth, canUndo, next }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(depth, forKey: .depth)
        try container.encode(canUndo, forKey: .canUndo)
        try container.encode(next, forKey: .next)
    }
}

/// `GET/PUT /state`: a client's saved current album.
public struct SavedStateResource: Codable, Sendable, Hashable {
    public var client: String
    public var currentAlbumIndex: Int
    /// The current album; nil only for an empty library.
    public var albumID: String?
    /// When the client last saved its state; nil if it never did.
    public var updatedAt: String?

    enum CodingKeys: String, CodingKey { case client, currentAlbumIndex, albumID, updatedAt }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(client, forKey: .client)
        try container.encode(currentAlbumIndex, forKey: .currentAlbumIndex)
        try container.encode(albumID, forKey: .albumID)
        try container.encode(updatedAt, forKey: .updatedAt)
    }
}
