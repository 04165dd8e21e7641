/// A view's filter AND a request's filter, as one `AlbumFilter` the store applies plus, where
/// one filter cannot hold both (two different texts, artists or genres), a remainder applied
/// in memory after the store's rows.
///
/// Year ranges intersect (an empty intersection matches nothing, in the store too). A
/// remainder costs: pages read on past rows it drops, and counting walks every row the store
/// filter lets through; views and requests that filter on different fields never have one.
struct CombinedFilter: Sendable, Hashable {
    /// Applied by the store.
    var store: AlbumFilter
    /// Applied in memory to what the store returns (nil: nothing more).
    var remainder: AlbumFilter?

    init(_ request: AlbumFilter, view: AlbumFilter = .all) {
        var store = request
        var remainder = AlbumFilter()
        func merge(_ mine: String?, _ theirs: String?, same: (String, String) -> Bool) -> (String?, String?) {
            switch (mine, theirs) {
            case let (nil, theirs): (theirs, nil)
            case let (mine?, theirs?) where !same(mine, theirs): (mine, theirs)
            case let (mine, _): (mine, nil)
            }
        }
        (store.text, remainder.text) = merge(request.text, view.text) { $0 == $1 }
        (store.artist, remainder.artist) = merge(request.artist, view.artist) { AlbumFilter.folded($0) == AlbumFilter.folded($1) }
        (store.genre, remainder.genre) = merge(request.genre, view.genre) { AlbumFilter.folded($0) == AlbumFilter.folded($1) }
        if let from = view.yearFrom { store.yearFrom = max(store.yearFrom ?? from, from) }
        if let to = view.yearTo { store.yearTo = min(store.yearTo ?? to, to) }
        self.store = store
        self.remainder = remainder.isEmpty ? nil : remainder
    }

    /// Whether nothing is filtered at all.
    var isEmpty: Bool { store.isEmpty && remainder == nil }

    /// Whether `album` passes both filters.
    func matches(_ album: Album) -> Bool {
        store.matches(album) && (remainder?.matches(album) ?? true)
    }

    /// Whether `album` passes the remainder (the store applied the rest).
    func remainderMatches(_ album: Album) -> Bool {
        remainder?.matches(album) ?? true
    }

    /// The number of albums of `reader` that pass.
    func count(in reader: any AlbumStoreReader) throws -> Int {
        guard let remainder else { return try reader.count(matching: store) }
        var count = 0
        try reader.forEachAlbum { album in
            if store.matches(album) && remainder.matches(album) { count += 1 }
        }
        return count
    }
}
