#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import BlueLibraryAPI
import Foundation

// What a client sends about libraries and views (`LibraryResource` and `ViewResource`, what the
// server sends, are the wire module's).

/// `POST /views`: a new view. `name` defaults to the id on the server; an empty `filter` is left out.
public struct ViewInput: Encodable, Sendable, Hashable {
    public var id: String
    public var name: String?
    public var sources: [String]
    public var filter: ViewFilter

    public init(id: String, name: String? = nil, sources: [String], filter: ViewFilter = ViewFilter()) {
        self.id = id
        self.name = name
        self.sources = sources
        self.filter = filter
    }

    enum CodingKeys: String, CodingKey { case id, name, sources, filter }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encode(sources, forKey: .sources)
        if !filter.isEmpty { try container.encode(filter, forKey: .filter) }
    }
}

/// `PATCH /views/{view}`: what to change; nil fields stay as they are. To remove a view's
/// filter, send an empty `ViewFilter()` (it replaces the filter as a whole).
public struct ViewUpdate: Encodable, Sendable, Hashable {
    public var name: String?
    public var sources: [String]?
    public var filter: ViewFilter?

    public init(name: String? = nil, sources: [String]? = nil, filter: ViewFilter? = nil) {
        self.name = name
        self.sources = sources
        self.filter = filter
    }
}

/// `GET /libraries`: `{"libraries": [...]}`, ordered by id.
struct LibraryListResource: Decodable {
    var libraries: [LibraryResource]
}

/// `GET /views`: `{"views": [...]}`.
struct ViewListResource: Decodable {
    var views: [ViewResource]
}
