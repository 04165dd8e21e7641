/// One offset-addressed page of a library, read in one snapshot.
public struct AlbumPage: Sendable, Equatable, Encodable {
    /// The albums of the page with their indexes, in order.
    public var items: [IndexedAlbum]
    public var offset: Int
    public var limit: Int
    /// The number of albums in the whole library at `version`.
    public var total: Int
    /// The library version the page was read at (drives ETags and "outdated").
    public var version: Int64

    /// The offset of the next page, or `nil` when this page reaches the end.
    public var nextOffset: Int? {
        offset + items.count < total && !items.isEmpty ? offset + items.count : nil
    }

    /// `limit` must be in this range (API.md: 1…500, default 50).
    public static let limitRange = 1...500
    public static let defaultLimit = 50

    public init(items: [IndexedAlbum], offset: Int, limit: Int, total: Int, version: Int64) {
        self.items = items
        self.offset = offset
        self.limit = limit
        self.total = total
        self.version = version
    }
}
