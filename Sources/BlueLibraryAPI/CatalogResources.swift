import Foundation

/// One library: `{"id":"jazz","name":"Jazz","albumCount":0,"version":0}`.
public struct LibraryResource: Codable, Sendable, Hashable, Identifiable {
    /// Lowercase letters, digits and `-`, 1-40 characters; `default` always exists.
    public var id: String
    /// The display name (the id unless one was given).
    public var name: String
    public var albumCount: Int
    /// The library's version: it grows with every change, and continues when a deleted library's
    /// id is created again.
    public var version: Int64

    public init(id: String, name: String, albumCount: Int, version: Int64) {
        self.id = id
        self.name = name
        self.albumCount = albumCount
        self.version = version
    }
}

/// The filter a view applies to its sources (only the keys given are sent; all given must
/// match, as on `GET /albums`). An empty filter lets every album through.
public struct ViewFilter: Codable, Sendable, Hashable {
    /// A search: every word in the title, artist or genre (folded; the last word a prefix).
    public var q: String?
    public var artist: String?
    public var genre: String?
    public var yearFrom: Int?
    public var yearTo: Int?

    public init(q: String? = nil, artist: String? = nil, genre: String? = nil, yearFrom: Int? = nil, yearTo: Int? = nil) {
        self.q = q
        self.artist = artist
        self.genre = genre
        self.yearFrom = yearFrom
        self.yearTo = yearTo
    }

    public var isEmpty: Bool { self == ViewFilter() }
}

/// One composite view: `{"id","name","sources":[...],"filter":{...},"revision":1,"versions":{...}}`.
/// Its list is the sources' lists concatenated in `sources` order (position order), or merged
/// by a value sort.
public struct ViewResource: Codable, Sendable, Hashable, Identifiable {
    public var id: String
    public var name: String
    /// The libraries it shows, in order (1 to 32, no duplicates).
    public var sources: [String]
    public var filter: ViewFilter
    /// Grows by one with every change to the view's definition.
    public var revision: Int64
    /// Each source's library version when the view was read (nil when the server left it out).
    public var versions: [String: Int64]?

    public init(id: String, name: String, sources: [String], filter: ViewFilter = ViewFilter(), revision: Int64,
                versions: [String: Int64]? = nil) {
        self.id = id
        self.name = name
        self.sources = sources
        self.filter = filter
        self.revision = revision
        self.versions = versions
    }

    enum CodingKeys: String, CodingKey { case id, name, sources, filter, revision, versions }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        name = try container.decode(String.self, forKey: .name)
        sources = try container.decode([String].self, forKey: .sources)
        filter = try container.decodeIfPresent(ViewFilter.self, forKey: .filter) ?? ViewFilter()
        revision = try container.decode(Int64.self, forKey: .revision)
        versions = try container.decodeIfPresent([String: Int64].self, forKey: .versions)
    }
}
