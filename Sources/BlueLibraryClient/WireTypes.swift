#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation

// The client's own copies of the server's wire format (openapi.yaml). They are defined here,
// not shared with the server's modules, so a client app links nothing of the server.

/// One album as the server sends it. `index` is the album's 0-based position in the library:
/// always present on single-album answers, and on list pages only when the list is in
/// position order without filters (on a view's page: its position in the view). `library` is
/// the library that holds it, sent on a view's pages and by a move between libraries.
public struct AlbumResource: Codable, Sendable, Hashable, Identifiable {
    public var id: String
    public var title: String
    public var artist: String
    public var genre: String
    public var year: Int?
    public var coverUrl: String?
    /// RFC 3339 in UTC with milliseconds, kept as sent (see `createdDate`).
    public var createdAt: String
    public var updatedAt: String
    public var index: Int?
    public var library: String?

    public init(id: String, title: String, artist: String, genre: String = "Pop", year: Int? = nil, coverUrl: String? = nil,
                createdAt: String, updatedAt: String, index: Int? = nil, library: String? = nil) {
        self.id = id
        self.title = title
        self.artist = artist
        self.genre = genre
        self.year = year
        self.coverUrl = coverUrl
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.index = index
        self.library = library
    }

    public var createdDate: Date? { WireDate.parse(createdAt) }
    public var updatedDate: Date? { WireDate.parse(updatedAt) }

    enum CodingKeys: String, CodingKey { case id, title, artist, genre, year, coverUrl, createdAt, updatedAt, index, library }

    /// Like the server: `year` and `coverUrl` are `null` when absent; `index` and `library` are left out when unknown.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(title, forKey: .title)
        try container.encode(artist, forKey: .artist)
        try container.encode(genre, forKey: .genre)
        try container.encode(year, forKey: .year)
        try container.encode(coverUrl, forKey: .coverUrl)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
        try container.encodeIfPresent(index, forKey: .index)
        try container.encodeIfPresent(library, forKey: .library)
    }
}

/// The body of `GET /albums`: `{"items": [...], "next": cursor-or-null, "version": n}`, plus
/// `total` when the query asked for `count=true`. `next` must be present (it is `null` on the
/// last page): a body without it is not this format and fails to decode.
///
/// A view's page (`GET /views/{view}/albums`) is the same body; it may also carry `versions`,
/// each source library's version. When it carries `versions` without `version`, `version` is
/// their sum: it grows whenever any source changes, which is all `version` is used for here.
public struct AlbumPageResource: Codable, Sendable, Hashable {
    public var items: [AlbumResource]
    /// The opaque cursor of the next page, or nil when this page reaches the end.
    public var next: String?
    /// The library version the page was read at.
    public var version: Int64
    /// The number of albums matching the query; only with `count=true`.
    public var total: Int?
    /// A view's page: each source library's version (by library id); nil when not sent.
    public var versions: [String: Int64]?

    public init(items: [AlbumResource], next: String?, version: Int64, total: Int? = nil, versions: [String: Int64]? = nil) {
        self.items = items
        self.next = next
        self.version = version
        self.total = total
        self.versions = versions
    }

    enum CodingKeys: String, CodingKey { case items, next, version, total, versions }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        items = try container.decode([AlbumResource].self, forKey: .items)
        guard container.contains(.next) else {
            throw DecodingError.keyNotFound(
                CodingKeys.next, .init(codingPath: container.codingPath, debugDescription: "a page must carry \"next\" (a cursor or null)"))
        }
        next = try container.decode(String?.self, forKey: .next)
        total = try container.decodeIfPresent(Int.self, forKey: .total)
        versions = try container.decodeIfPresent([String: Int64].self, forKey: .versions)
        if let versions, !container.contains(.version) {
            version = versions.values.reduce(0, +)
        } else {
            version = try container.decode(Int64.self, forKey: .version)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(items, forKey: .items)
        try container.encode(next, forKey: .next)
        try container.encode(version, forKey: .version)
        try container.encodeIfPresent(total, forKey: .total)
        try container.encodeIfPresent(versions, forKey: .versions)
    }
}

/// A page as received: the body plus the headers that matter for paging and revalidation.
public struct AlbumPage: Sendable, Hashable {
    public var resource: AlbumPageResource
    /// The page's `ETag`, to send back as `If-None-Match`.
    public var etag: String?
    /// The `Link: <...>; rel="next"` target, when the server sent one.
    public var nextLink: URL?

    public init(resource: AlbumPageResource, etag: String? = nil, nextLink: URL? = nil) {
        self.resource = resource
        self.etag = etag
        self.nextLink = nextLink
    }

    public var items: [AlbumResource] { resource.items }
    public var next: String? { resource.next }
    public var version: Int64 { resource.version }
    public var versions: [String: Int64]? { resource.versions }
    public var total: Int? { resource.total }
}

/// The answer to a conditional GET: a new representation, or 304 (what the client holds is current).
public enum Revalidated<Value: Sendable>: Sendable {
    case modified(Value)
    case notModified
}

extension Revalidated: Equatable where Value: Equatable {}

/// A new album for `POST /albums`. `title` and `artist` are required; nil fields are left out
/// (the server then uses its defaults: genre "Pop", no year, no cover).
public struct AlbumInput: Codable, Sendable, Hashable {
    public var title: String
    public var artist: String
    public var genre: String?
    public var year: Int?
    public var coverUrl: String?

    public init(title: String, artist: String, genre: String? = nil, year: Int? = nil, coverUrl: String? = nil) {
        self.title = title
        self.artist = artist
        self.genre = genre
        self.year = year
        self.coverUrl = coverUrl
    }
}

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

/// What `PUT /state` saves: a position or an album id.
public enum StateTarget: Sendable, Hashable {
    case index(Int)
    case album(id: String)
}

/// An RFC 9457 problem document, as the server sends for every error.
public struct Problem: Codable, Sendable, Hashable, CustomStringConvertible {
    public struct FieldError: Codable, Sendable, Hashable {
        public var field: String
        public var message: String

        public init(field: String, message: String) {
            self.field = field
            self.message = message
        }
    }

    public var type: String
    public var title: String
    public var status: Int
    public var detail: String
    public var instance: String?
    public var errors: [FieldError]

    public init(type: String = "about:blank", title: String, status: Int, detail: String, instance: String? = nil,
                errors: [FieldError] = []) {
        self.type = type
        self.title = title
        self.status = status
        self.detail = detail
        self.instance = instance
        self.errors = errors
    }

    enum CodingKeys: String, CodingKey { case type, title, status, detail, instance, errors }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        type = try container.decodeIfPresent(String.self, forKey: .type) ?? "about:blank"
        status = try container.decode(Int.self, forKey: .status)
        title = try container.decodeIfPresent(String.self, forKey: .title) ?? HTTPURLResponse.localizedString(forStatusCode: status)
        detail = try container.decodeIfPresent(String.self, forKey: .detail) ?? title
        instance = try container.decodeIfPresent(String.self, forKey: .instance)
        errors = try container.decodeIfPresent([FieldError].self, forKey: .errors) ?? []
    }

    /// The message for one line: the detail, then any field errors whose message it does not already say.
    public var description: String {
        let extra = errors.filter { !detail.contains($0.message) }.map { "\($0.field): \($0.message)" }
        let text = extra.isEmpty ? detail : "\(detail) (\(extra.joined(separator: "; ")))"
        return text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}

/// The keys `GET /albums` sorts by; `-` before the name on the wire means descending.
public struct AlbumSort: Sendable, Hashable, CustomStringConvertible {
    public enum Field: String, Sendable, CaseIterable {
        case position, title, artist, year, createdAt
    }

    public var field: Field
    public var descending: Bool

    public init(_ field: Field, descending: Bool = false) {
        self.field = field
        self.descending = descending
    }

    /// Parses the wire spelling: `title`, `-year`, ...
    public init?(_ text: String) {
        let descending = text.hasPrefix("-")
        guard let field = Field(rawValue: descending ? String(text.dropFirst()) : text) else { return nil }
        self.init(field, descending: descending)
    }

    public static let position = AlbumSort(.position)

    public var description: String { (descending ? "-" : "") + field.rawValue }
}

/// The query of `GET /albums`: page size, where to start (a cursor or an offset), order and filters.
public struct AlbumPageQuery: Sendable, Hashable {
    /// Albums per page, 1...500; nil lets the server choose (50).
    public var limit: Int?
    /// The opaque cursor from a previous page's `next`.
    public var cursor: String?
    /// Offset paging, for index-minded clients; ignored when `cursor` is set.
    public var offset: Int?
    public var sort: AlbumSort?
    /// Case-insensitive search in title and artist.
    public var q: String?
    public var artist: String?
    public var genre: String?
    public var yearFrom: Int?
    public var yearTo: Int?
    /// Ask for `total`, the number of matching albums.
    public var count: Bool

    public init(limit: Int? = nil, cursor: String? = nil, offset: Int? = nil, sort: AlbumSort? = nil, q: String? = nil,
                artist: String? = nil, genre: String? = nil, yearFrom: Int? = nil, yearTo: Int? = nil, count: Bool = false) {
        self.limit = limit
        self.cursor = cursor
        self.offset = offset
        self.sort = sort
        self.q = q
        self.artist = artist
        self.genre = genre
        self.yearFrom = yearFrom
        self.yearTo = yearTo
        self.count = count
    }

    /// The same query, continuing at `cursor` (the offset is dropped).
    public func continuing(at cursor: String) -> AlbumPageQuery {
        var query = self
        query.cursor = cursor
        query.offset = nil
        return query
    }

    /// The query string's name/value pairs, in a fixed order.
    public var queryItems: [(name: String, value: String)] {
        var items: [(String, String)] = []
        if let limit { items.append(("limit", String(limit))) }
        if let cursor {
            items.append(("cursor", cursor))
        } else if let offset {
            items.append(("offset", String(offset)))
        }
        if let sort { items.append(("sort", sort.description)) }
        if let q { items.append(("q", q)) }
        if let artist { items.append(("artist", artist)) }
        if let genre { items.append(("genre", genre)) }
        if let yearFrom { items.append(("yearFrom", String(yearFrom))) }
        if let yearTo { items.append(("yearTo", String(yearTo))) }
        if count { items.append(("count", "true")) }
        return items
    }
}

/// RFC 3339 timestamps with milliseconds, as the server writes them.
enum WireDate {
    static func parse(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle())
    }
}
