import BlueLibraryAPI
import Essentials

/// A list query: which albums, in which order. Pages of one query are tied together by
/// cursors, which carry the query's fingerprint.
public struct AlbumQuery: Sendable, Hashable {
    public var sort: AlbumSort
    public var filter: AlbumFilter

    /// A `.relevance` sort ranks by the filter's `q` (`AlbumSort.search`).
    public init(sort: AlbumSort = .position, filter: AlbumFilter = .all) {
        self.sort = sort
        self.filter = filter
        if sort.field == .relevance { self.sort.search = filter.text.flatMap(SearchQuery.init) }
    }

    /// The query of a list request: `sort` as asked, or when none is, by relevance if the
    /// request searches (`q`) and in the list's own order if not.
    /// - Throws: `.invalid` naming `sort` for `relevance` without `q`.
    public static func listing(sort: AlbumSort?, filter: AlbumFilter) throws(LibraryError) -> AlbumQuery {
        let searching = filter.text.map { !$0.isEmpty } ?? false
        let sort = sort ?? (searching ? AlbumSort(.relevance) : .position)
        if sort.field == .relevance, !searching {
            throw .invalid(ValidationFailure([FieldError(
                field: "sort", message: "sort=relevance orders by how well albums match q; send q with it, or another sort")]))
        }
        return AlbumQuery(sort: sort, filter: filter)
    }

    /// Whether items carry their library index: only the library's own order, unfiltered,
    /// where an item's place in the list is its index.
    public var showsIndexes: Bool { sort == .position && filter.isEmpty }

    /// A short, stable fingerprint of sort and filter (FNV-1a 64, hex).
    public var fingerprint: String {
        FNV1a.hex(FNV1a.hash(Array("\(sort)|\(filter.canonical)".utf8)))
    }
}

/// Where a page starts.
public enum PageStart: Sendable, Hashable {
    /// The first page.
    case first
    /// After the last item of the page that produced this cursor.
    case cursor(PageCursor)
    /// At this position in the query's order (index-minded clients; not stable under changes).
    case offset(Int)
}

/// One page request: the query, where to start, how many, and whether to count.
public struct PageRequest: Sendable, Hashable {
    public var query: AlbumQuery
    public var start: PageStart
    public var limit: Int
    public var includeTotal: Bool

    /// The absolute bounds of `limit` the facade accepts, whatever the settings say (the
    /// `paging.maxLimit` setting may lower the maximum, never raise it past this).
    public static let limitRange = 1...500
    /// The built-in default; the server uses the `paging.defaultLimit` setting.
    public static let defaultLimit = 50

    public init(query: AlbumQuery = AlbumQuery(), start: PageStart = .first, limit: Int = PageRequest.defaultLimit,
                includeTotal: Bool = false) {
        self.query = query
        self.start = start
        self.limit = limit
        self.includeTotal = includeTotal
    }
}

/// An album in a list, with its index when the list shows indexes (in a view: its index in
/// the view), and in a view the library it belongs to.
public struct ListedAlbum: Sendable, Equatable {
    public var album: Album
    public var index: Int?
    /// The library that holds the album; set in view pages only.
    public var library: LibraryID?

    public init(album: Album, index: Int?, library: LibraryID? = nil) {
        self.album = album
        self.index = index
        self.library = library
    }
}

/// One page of a query, read in one snapshot.
public struct AlbumListPage: Sendable, Equatable {
    public var items: [ListedAlbum]
    /// The cursor of the next page, or nil at the end.
    public var next: PageCursor?
    /// The library version the page was read at (a view: its first source's).
    public var version: Int64
    /// The version of each source the page was read at, in the view's source order (a
    /// library page: `[version]`).
    public var versions: [Int64]
    /// The number of albums the query matches, when asked for.
    public var total: Int?

    public init(items: [ListedAlbum], next: PageCursor?, version: Int64, versions: [Int64]? = nil, total: Int?) {
        self.items = items
        self.next = next
        self.version = version
        self.versions = versions ?? [version]
        self.total = total
    }
}

/// Where a store starts reading a query's order.
public enum SortAnchor: Sendable, Hashable {
    /// From the first album of the order.
    case start
    /// Skipping this many albums of the order.
    case offset(Int)
    /// Right after this album's current place in the library's own order (position sort only).
    case afterAlbum(AlbumID)
    /// Right after this key in a value order: albums whose (value, id) comes after it.
    case afterValue(SortValue, AlbumID)
}

/// A place in a value order: a sort value and an album id (ids are unique across libraries, so
/// two different albums never share a key).
public struct SortKey: Sendable, Hashable {
    public var value: SortValue
    public var id: AlbumID

    public init(_ value: SortValue, _ id: AlbumID) {
        self.value = value
        self.id = id
    }

    /// `album`'s key in a value order; nil for the position order, which has no value.
    public static func of(_ album: Album, for field: AlbumSort.Field, articles: SortArticles, search: SearchQuery? = nil) -> SortKey? {
        SortValue.of(album, for: field, articles: articles, search: search).map { SortKey($0, album.id) }
    }
}

/// A stretch of a value order, both ends open: the albums strictly after `after` (from the
/// first when nil) and strictly before `before` (to the last when nil), "after" and "before"
/// in the sort's own direction.
public struct SortRange: Sendable, Hashable {
    public var after: SortKey?
    public var before: SortKey?

    public init(after: SortKey? = nil, before: SortKey? = nil) {
        self.after = after
        self.before = before
    }

    /// The whole order.
    public static let all = SortRange()
}
