import Essentials
import Foundation

/// A client's saved "current album" (the tutorial's `currentAlbumIndex` memento).
///
/// Stored as the client set it; the facade resolves it against the library when it is read
/// (see `SavedState.resolved`), so the stored value never needs rewriting when other clients
/// change the list.
public struct SavedState: Sendable, Equatable, Codable {
    /// The client the state belongs to (`?client=`); "default" when none is named.
    public var client: String
    /// The 0-based index of the current album.
    public var currentAlbumIndex: Int
    /// The album at `currentAlbumIndex` when the state was saved or resolved; `nil` only for
    /// an empty library.
    public var albumID: AlbumID?
    /// When the client last saved the state; `nil` for a client that never saved one.
    public var updatedAt: Date?

    public init(client: String, currentAlbumIndex: Int, albumID: AlbumID?, updatedAt: Date?) {
        self.client = client
        self.currentAlbumIndex = currentAlbumIndex
        self.albumID = albumID
        self.updatedAt = updatedAt
    }

    private enum CodingKeys: String, CodingKey {
        case client, currentAlbumIndex, albumID, updatedAt
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        client = try container.decode(String.self, forKey: .client)
        currentAlbumIndex = try container.decode(Int.self, forKey: .currentAlbumIndex)
        albumID = try container.decodeIfPresent(AlbumID.self, forKey: .albumID)
        if let text = try container.decodeIfPresent(String.self, forKey: .updatedAt) {
            guard let date = Timestamp.parse(text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .updatedAt, in: container, debugDescription: "updatedAt must be an RFC 3339 timestamp")
            }
            updatedAt = date
        } else {
            updatedAt = nil
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(client, forKey: .client)
        try container.encode(currentAlbumIndex, forKey: .currentAlbumIndex)
        if let albumID { try container.encode(albumID, forKey: .albumID) } else { try container.encodeNil(forKey: .albumID) }
        if let updatedAt {
            try container.encode(Timestamp.format(updatedAt), forKey: .updatedAt)
        } else {
            try container.encodeNil(forKey: .updatedAt)
        }
    }
}
