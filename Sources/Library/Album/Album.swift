import BlueLibraryAPI
import Essentials
import Foundation

/// One album in a library: the tutorial's `Album`, plus the server-assigned identity and
/// timestamps a shared service needs.
///
/// Rules (enforced where albums are made from outside input — `AlbumInput`, `AlbumPatch`,
/// archive import — not by this plain value type, which storage and undo rebuild from trusted
/// data):
/// - `title`, `artist` and `genre` are trimmed and 1…500 characters; `genre` defaults to
///   "Pop", as the tutorial's initializer set it.
/// - `year` is 1000…9999 or absent; `coverUrl` is an absolute http(s) URL of at most 2048
///   characters, or absent.
/// - `createdAt` and `updatedAt` are whole milliseconds (see `Timestamp`).
///
/// Coding: camelCase keys as in the tutorial (`coverUrl`); dates are always RFC 3339 strings,
/// whatever the encoder's date strategy, so every JSON form of an album looks the same; absent
/// optionals are written as `null` so every album has the same shape.
public struct Album: Sendable, Equatable, Hashable, Codable {
    public var id: AlbumID
    public var title: String
    public var artist: String
    public var genre: String
    public var year: Int?
    public var coverUrl: String?
    public var createdAt: Date
    public var updatedAt: Date

    /// The genre an album gets when none is given (the tutorial's initializer always set it).
    public static let defaultGenre = AlbumFieldLimits.defaultGenre

    public init(
        id: AlbumID,
        title: String,
        artist: String,
        genre: String = Album.defaultGenre,
        year: Int? = nil,
        coverUrl: String? = nil,
        createdAt: Date,
        updatedAt: Date
    ) {
        self.id = id
        self.title = title
        self.artist = artist
        self.genre = genre
        self.year = year
        self.coverUrl = coverUrl
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// Builds a new album from validated input.
    public init(id: AlbumID, input: AlbumInput, createdAt: Date) {
        self.init(
            id: id, title: input.title, artist: input.artist, genre: input.genre, year: input.year,
            coverUrl: input.coverUrl, createdAt: createdAt, updatedAt: createdAt)
    }

    /// The album's user-editable fields, as validated input.
    public var input: AlbumInput {
        AlbumInput(validTitle: title, artist: artist, genre: genre, year: year, coverUrl: coverUrl)
    }

    /// The wire module's names (`AlbumField`), so the stored and sent forms cannot drift apart.
    typealias CodingKeys = AlbumField

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(AlbumID.self, forKey: .id)
        title = try container.decode(String.self, forKey: .title)
        artist = try container.decode(String.self, forKey: .artist)
        genre = try container.decodeIfPresent(String.self, forKey: .genre) ?? Album.defaultGenre
        year = try container.decodeIfPresent(Int.self, forKey: .year)
        coverUrl = try container.decodeIfPresent(String.self, forKey: .coverUrl)
        createdAt = try Self.decodeDate(container, .createdAt)
        updatedAt = try Self.decodeDate(container, .updatedAt)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(title, forKey: .title)
        try container.encode(artist, forKey: .artist)
        try container.encode(genre, forKey: .genre)
        if let year { try container.encode(year, forKey: .year) } else { try container.encodeNil(forKey: .year) }
        if let coverUrl { try container.encode(coverUrl, forKey: .coverUrl) } else { try container.encodeNil(forKey: .coverUrl) }
        try container.encode(Timestamp.format(createdAt), forKey: .createdAt)
        try container.encode(Timestamp.format(updatedAt), forKey: .updatedAt)
    }

    private static func decodeDate(_ container: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> Date {
        let text = try container.decode(String.self, forKey: key)
        guard let date = Timestamp.parse(text) else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: container, debugDescription: "\(key.rawValue) must be an RFC 3339 timestamp")
        }
        return date
    }
}
