/// One library as the catalog lists it (`GET /libraries`).
public struct LibraryRecord: Sendable, Equatable {
    public var id: LibraryID
    /// The display name (`"Jazz"`); defaults to the id.
    public var name: String
    public var albumCount: Int
    /// The library version (as `AlbumStoreReader.version()`).
    public var version: Int64

    public init(id: LibraryID, name: String, albumCount: Int, version: Int64) {
        self.id = id
        self.name = name
        self.albumCount = albumCount
        self.version = version
    }
}

/// A composite view as stored: one list made of several libraries (the composite data source).
public struct ViewDefinition: Sendable, Equatable {
    public var id: ViewID
    public var name: String
    /// The libraries the view shows, in order: position order is their orders concatenated.
    public var sources: [LibraryID]
    /// Applied to every source, in addition to the filter of each list request.
    public var filter: AlbumFilter
    /// Increased by every change of the definition, so pages and ETags of the old definition
    /// are never taken for the new one.
    public var revision: Int64

    public init(id: ViewID, name: String, sources: [LibraryID], filter: AlbumFilter = .all, revision: Int64 = 1) {
        self.id = id
        self.name = name
        self.sources = sources
        self.filter = filter
        self.revision = revision
    }
}
