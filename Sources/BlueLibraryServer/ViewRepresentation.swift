import Library

/// A composite view on the wire:
/// `{"id": "everything", "name": "Everything", "sources": ["default", "jazz"],
///   "filter": {"genre": "Jazz"}, "revision": 1, "versions": {"default": 12, "jazz": 3}}`.
///
/// `filter` holds only the keys that are set (`{}` for none); `versions` is each source's
/// library version now (a view's version is that vector: any change in a source changes it).
struct ViewDocument: Encodable {
    let id: String
    let name: String
    let sources: [String]
    let filter: FilterDocument
    let revision: Int64
    let versions: [String: Int64]

    init(_ view: ViewDefinition, versions: [LibraryID: Int64]) {
        id = view.id.rawValue
        name = view.name
        sources = view.sources.map(\.rawValue)
        filter = FilterDocument(view.filter)
        revision = view.revision
        self.versions = Dictionary(uniqueKeysWithValues: versions.map { ($0.key.rawValue, $0.value) })
    }
}

/// An `AlbumFilter` with only its set conditions, under the list's query parameter names.
struct FilterDocument: Encodable {
    let filter: AlbumFilter

    init(_ filter: AlbumFilter) { self.filter = filter }

    private enum Key: String, CodingKey { case q, artist, genre, yearFrom, yearTo }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encodeIfPresent(filter.text, forKey: .q)
        try container.encodeIfPresent(filter.artist, forKey: .artist)
        try container.encodeIfPresent(filter.genre, forKey: .genre)
        try container.encodeIfPresent(filter.yearFrom, forKey: .yearFrom)
        try container.encodeIfPresent(filter.yearTo, forKey: .yearTo)
    }
}

/// `GET /views`: `{"views": [...]}`, ordered by id.
struct ViewListDocument: Encodable {
    let views: [ViewDocument]
}
