import BlueLibraryAPI
import Foundation

/// The replica's albums as pages of the paged list (what `AlbumListModel` and the CLI read
/// offline), and the local undo of a queued edit.
extension LibraryReplica {
    /// The page of the app's albums (local edits included) that `query` asks for, filtered and
    /// sorted as the server would (by relevance when `q` is given without a sort): `q` is a
    /// search (`SearchQuery`), `artist` and `genre` match
    /// exactly, ignoring ASCII case; `yearFrom`/`yearTo` leave out albums without a year; titles
    /// and artists sort by their keys (`SortText`; artists without a leading The, A or An, the
    /// server's default `sorting.ignoredArticles`: a server set otherwise orders its artists
    /// differently); sorts break ties by id, a missing year sorts as 0. Each album has its
    /// `index` in position order only (as on the server). `limit` defaults to 20 (at most
    /// 500); the cursor is the replica's own (`r` and an offset; a server cursor is refused).
    /// `version` is the server version the replica is at; there is no ETag.
    public func page(_ query: AlbumPageQuery = AlbumPageQuery()) throws(ReplicaError) -> AlbumPage {
        let limit = min(max(query.limit ?? 20, 1), 500)
        var start = query.offset ?? 0
        if let cursor = query.cursor {
            guard cursor.first == "r", let offset = Int(cursor.dropFirst()), offset >= 0 else {
                throw .invalidCursor(cursor)
            }
            start = offset
        }
        let all = try albums()
        let matching = all.filter { Self.matches($0, query) }
        let search = query.q.flatMap(SearchQuery.init)
        let sort = query.sort ?? AlbumSort(search == nil ? .position : .relevance)
        var ordered = Self.sorted(matching, by: sort.field, search: search)
        if sort.descending { ordered.reverse() }
        if sort.field != .position {
            for position in ordered.indices { ordered[position].index = nil }
        }
        let end = min(ordered.count, start + limit)
        let items = start < end ? Array(ordered[start..<end]) : []
        let next = end < ordered.count ? "r\(end)" : nil
        let resource = AlbumPageResource(items: items, next: next, version: try version(), total: query.count ? ordered.count : nil)
        return AlbumPage(resource: resource)
    }

    /// Takes back the newest queued edit (it is removed from the outbox and the app's albums
    /// are rebuilt without it); answers it, or nil when nothing is queued. Edits already sent
    /// are the server's: its undo (`POST /undo`) takes those back.
    @discardableResult
    public func undoLastPending() throws(ReplicaError) -> ReplicaOperation? {
        guard !syncing || followerPulling else { throw .busy }  // a pull leaves the outbox alone
        let last = try storage { () throws -> OutboxEntry? in
            guard let entry = try store.last() else { return nil }
            guard try !store.isInPushBatch(entry.seq) else {
                // Its batch may have been applied with the answer lost: taking it back here
                // would make the batch's retry another batch under the same key.
                throw ReplicaError.unsettled(
                    "the newest queued change went to the server in a batch whose answer did not come back; "
                        + "sync first, then undo it on the server")
            }
            try store.removeFromOutbox(entry.seq)
            return entry
        }
        guard let last else { return nil }
        try rebuildLocal()
        return last.operation
    }

    /// Whether the replica ever loaded the server's list (false for a new file before its
    /// first sync: it holds only local adds then).
    public func hasLoaded() throws(ReplicaError) -> Bool {
        try storage { try store.meta("loaded") == "1" }
    }

    /// The number of queued local edits.
    public func pendingCount() throws(ReplicaError) -> Int {
        try storage { try store.outboxCount() }
    }

    static func matches(_ album: AlbumResource, _ query: AlbumPageQuery) -> Bool {
        // The server's search rule (`SearchQuery`): a q with no word matches nothing, as there.
        if let q = query.q, !q.isEmpty {
            guard let search = SearchQuery(q),
                  search.matches(document: SearchText.document(title: album.title, artist: album.artist, genre: album.genre))
            else { return false }
        }
        if let artist = query.artist, folded(artist) != folded(album.artist) { return false }
        if let genre = query.genre, folded(genre) != folded(album.genre) { return false }
        if let from = query.yearFrom, (album.year ?? Int.min) < from { return false }
        if let to = query.yearTo, (album.year ?? Int.max) > to { return false }
        return true
    }

    /// `albums` in ascending order of `field`, ties broken by id (the server's rule); position
    /// order is the order given; relevance is the rank in `search` (`SearchQuery.rank`).
    static func sorted(_ albums: [AlbumResource], by field: AlbumSort.Field, search: SearchQuery? = nil) -> [AlbumResource] {
        func ordered<T: Comparable>(_ keyOf: (AlbumResource) -> T) -> [AlbumResource] {
            albums.map { (key: keyOf($0), album: $0) }
                .sorted { $0.key != $1.key ? $0.key < $1.key : $0.album.id < $1.album.id }
                .map(\.album)
        }
        switch field {
        case .position: return albums
        // Sort keys compare byte by byte (the server's stored keys, SQLite's BINARY collation).
        case .title: return ordered { Bytes(SortText.key($0.title)) }
        case .artist: return ordered { Bytes(SortText.artistKey($0.artist, ignoring: .standard)) }
        case .genre: return ordered { Bytes(SortText.key($0.genre)) }
        case .year: return ordered { $0.year ?? 0 }
        case .createdAt: return ordered { $0.createdDate ?? .distantPast }
        case .relevance:
            return ordered { search?.rank(document: SearchText.document(title: $0.title, artist: $0.artist, genre: $0.genre)) ?? 0 }
        }
    }

    /// Text ordered by its UTF-8 bytes (Swift's `String` order is by Unicode scalars'
    /// canonical equivalence, not the servers').
    private struct Bytes: Comparable {
        let bytes: [UInt8]
        init(_ text: String) { bytes = Array(text.utf8) }
        static func < (a: Bytes, b: Bytes) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
    }

    /// `text` with ASCII letters lowercased (the server's case folding; other letters as they are).
    static func folded(_ text: String) -> String {
        String(decoding: text.utf8.map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
    }
}
