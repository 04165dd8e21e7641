#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
// The resources the server sends are the wire module's (`BlueLibraryAPI`, shared with the
// server), named here too so that an app that imports this module sees them; what only a
// client needs (requests, queries, a page with its headers) is defined here. A client app links
// nothing of the server's modules. (Not a re-export of the whole module: its `AlbumInput` is the
// server's validated input, and this module's `AlbumInput` is what a client sends.)
import BlueLibraryAPI
import Foundation

public typealias AlbumResource = BlueLibraryAPI.AlbumResource
public typealias AlbumPageResource = BlueLibraryAPI.AlbumPageResource
public typealias LibraryResource = BlueLibraryAPI.LibraryResource
public typealias ViewFilter = BlueLibraryAPI.ViewFilter
public typealias ViewResource = BlueLibraryAPI.ViewResource
public typealias SavedStateResource = BlueLibraryAPI.SavedStateResource
public typealias UndoStatusResource = BlueLibraryAPI.UndoStatusResource
public typealias UndoResultResource = BlueLibraryAPI.UndoResultResource
public typealias KeyResource = BlueLibraryAPI.KeyResource
public typealias KeySelfResource = BlueLibraryAPI.KeySelfResource

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
        case position, title, artist, genre, year, createdAt
        /// How well albums match `q` (only with `q`; the server's default when `q` is given).
        case relevance
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
    /// A search: every word in the title, artist or genre (folded; the last word a prefix).
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
