import Essentials
import Foundation

// The album as it travels: its fields' names (`AlbumField`), the Codable resource clients
// decode (`AlbumResource`), the server's byte encoder (`AlbumJSON`), and the page around them.
// The server and the Swift client share these; `WireSchemaTests` holds them to openapi.yaml.

/// The album object's keys, in the order the server writes them: the one list of their names.
/// `index` and `library` come only where the representation has them.
public enum AlbumField: String, CodingKey, CaseIterable, Sendable {
    case id, title, artist, genre, year, coverUrl, createdAt, updatedAt, index, library

    /// The fields every album has (what an archive or an undo command stores).
    public static let albumFields: [AlbumField] = [.id, .title, .artist, .genre, .year, .coverUrl, .createdAt, .updatedAt]
}

/// The server's encoder of the album object: the same keys, order and values as
/// `AlbumResource`'s `Codable` form, written by hand for the hot paths (pages, the streaming
/// export: no `JSONEncoder` per album). Compact UTF-8, so the same album always gives the same
/// bytes (its ETag hashes them).
public enum AlbumJSON {
    /// Appends `{"id":…,"title":…,"artist":…,"genre":…,"year":…,"coverUrl":…,"createdAt":…,"updatedAt":…}`;
    /// an absent year or cover is `null`, dates are RFC 3339 with milliseconds in UTC.
    public static func append(
        id: String, title: String, artist: String, genre: String, year: Int?, coverUrl: String?,
        createdAt: Date, updatedAt: Date, to buffer: inout [UInt8]
    ) {
        buffer.append(UInt8(ascii: "{"))
        buffer.append(contentsOf: keys[0])
        JSONString.append(id, to: &buffer)
        buffer.append(contentsOf: keys[1])
        JSONString.append(title, to: &buffer)
        buffer.append(contentsOf: keys[2])
        JSONString.append(artist, to: &buffer)
        buffer.append(contentsOf: keys[3])
        JSONString.append(genre, to: &buffer)
        buffer.append(contentsOf: keys[4])
        JSONBytes.appendRaw(year.map(String.init) ?? "null", to: &buffer)
        buffer.append(contentsOf: keys[5])
        JSONString.append(coverUrl, to: &buffer)
        buffer.append(contentsOf: keys[6])
        Timestamp.appendQuoted(createdAt, to: &buffer)
        buffer.append(contentsOf: keys[7])
        Timestamp.appendQuoted(updatedAt, to: &buffer)
        buffer.append(UInt8(ascii: "}"))
    }

    /// `"id":`, `,"title":`, …: each album field's key with the comma before it (none before the first).
    private static let keys: [[UInt8]] = AlbumField.albumFields.enumerated().map { offset, field in
        Array(((offset == 0 ? "" : ",") + "\"\(field.rawValue)\":").utf8)
    }
}

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

    typealias CodingKeys = AlbumField

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

/// RFC 3339 timestamps with milliseconds, as the server writes them.
public enum WireDate {
    public static func parse(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle())
    }

    /// `date` in UTC to the nearest millisecond, `2027-01-01T00:00:00.000Z`. (The formatter's own
    /// fractional seconds cut the binary fraction: a whole millisecond held as 0.12299999… came
    /// out as `.122`.)
    public static func format(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let seconds = milliseconds.quotientAndRemainder(dividingBy: 1000)
        let (whole, fraction) = seconds.remainder < 0 ? (seconds.quotient - 1, seconds.remainder + 1000) : seconds
        let text = Date(timeIntervalSince1970: TimeInterval(whole)).formatted(Date.ISO8601FormatStyle())
        let digits = String(fraction)
        return String(text.dropLast()) + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }
}
