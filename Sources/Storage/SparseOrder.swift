import Library

// The order of a library's albums, kept with two levels of sparse integer keys.
//
// - The albums are split into consecutive *buckets*. A bucket row has `ord`, a sparse key
//   ordering the buckets of a library, and `size`, its number of albums.
// - An album row has `(bucket, pos)`; `pos` is a sparse key ordering the albums of its bucket.
//   The list order is therefore `ORDER BY bucket.ord, album.pos`.
//
// Keys are spread `gap` (2^32 by default) apart when created; an insert between two keys takes
// their midpoint. Only when two neighbours are adjacent integers (after 32 inserts into the
// same gap) are keys rewritten: first a window of rows around the spot, doubled until its keys
// can be spread at least gap/64 apart (one `UPDATE` of typically a few dozen rows), else the
// whole bucket (one `UPDATE`, at most `2 × bucketSize` rows). Keys stay within ±2^60, so no sum of two keys or of a key and
// a spread can overflow `Int64`.
//
// Costs, with n albums and B = bucketSize (n/B buckets of B…2B albums):
// - index → (bucket, offset): a covering scan of the bucket table in order, summing sizes,
//   from whichever end is nearer (≤ n/2B rows), then `ORDER BY pos LIMIT 1 OFFSET k` with k < 2B.
// - index of an album: one statement summing the sizes of earlier buckets plus a count inside
//   its bucket.
// - insert: locate, pick a key, one `INSERT`, one bucket size update; a bucket above 2B splits
//   in two (one `UPDATE` moving half of it to a new bucket).
// - delete: one `DELETE`, one size update; an emptied bucket is removed, and a bucket down to B/4
//   is merged into a neighbour when both fit in B.
// - append (archive import): fills the last bucket up to B, then opens a new one; the last
//   bucket's size is written back lazily, so a run of appends is one `INSERT` per album.

/// The bucket size rules derived from the configured size.
struct BucketLayout {
    /// Appends fill a bucket up to this size; merges never make a bucket larger.
    let target: Int
    /// A bucket splits when it grows beyond this.
    let maximum: Int
    /// A bucket this small (or smaller) is merged into a neighbour when they fit together.
    let minimum: Int
    /// Distance between consecutive album keys in a bucket when they are (re)numbered.
    let positionGap: Int64
    /// Album keys stay within ±positionLimit.
    let positionLimit: Int64
    /// Distance between consecutive bucket keys when they are (re)numbered.
    let bucketGap: Int64
    /// Bucket keys stay within ±bucketLimit.
    let bucketLimit: Int64 = 1 << 60

    init(target: Int, spacing: SparseKeySpacing) {
        self.target = target
        self.maximum = 2 * target
        self.minimum = max(1, target / 4)
        self.positionGap = spacing.positionGap
        self.positionLimit = spacing.positionLimit
        self.bucketGap = spacing.bucketGap
    }
}

/// One bucket row.
struct Bucket: Equatable {
    var ord: Int64
    var id: Int64
    var size: Int

    init(ord: Int64, id: Int64, size: Int) {
        self.ord = ord
        self.id = id
        self.size = size
    }

    /// Columns: ord, id, size.
    init(row: some SQLRow) throws {
        self.init(ord: try row.int64(0), id: try row.int64(1), size: try row.int(2))
    }
}

/// The list order of one library's albums, on the two levels of sparse keys above: the only
/// code that writes `buckets`, `albums.bucket`/`albums.pos` and `libraries.album_count`
/// (filtered pages, `AlbumPages`, and the consistency check only read them).
///
/// Answers position questions (count, the album at an index, a range, the index of an album)
/// and applies position changes (insert at, append, remove, remove all), keeping the bucket
/// sizes, splits, merges and key spacing right. It never writes album fields: an insert hands
/// the chosen `(bucket, pos)` to a closure that writes the row.
///
/// One per transaction (created by `LibraryTransaction`), and it caches for that long only:
/// - the album count, read once, then maintained, written back by `finish()`;
/// - the *tail*: the last bucket while albums are being appended, whose size is written back
///   only when something needs exact bucket sizes (`settleTail()`) or at `finish()`. A run of
///   appends (an archive import) therefore costs one `INSERT` per album.
final class SparseOrder<DB: SQLSession> {
    let db: DB
    /// The library's row id (a live library: transactions open only on those).
    let library: Int64
    let layout: BucketLayout
    let context: EngineContext

    private var cachedCount: Int?
    private var countIsDirty = false
    private var tail: Tail?

    /// The last bucket while appending, with the last position in it.
    private struct Tail {
        var bucket: Bucket
        var lastPosition: Int64
        var sizeIsDirty: Bool
    }

    /// Whether this is the only library its write transaction writes (see `removeAll`).
    private let soleWriter: Bool

    /// - Parameter knownCount: the library's album count, when the caller read it in this
    ///   transaction (under its row lock, or in its snapshot); else it is read when first needed.
    init(_ db: DB, library: Int64, context: EngineContext, soleWriter: Bool = false, knownCount: Int? = nil) {
        self.db = db
        self.cachedCount = knownCount
        self.library = library
        self.context = context
        self.soleWriter = soleWriter
        self.layout = context.layout
    }


    /// Writes back what is only cached (tail size, count), and `version` with the count when
    /// given (one update of the library row). Called before commit.
    func finish(version: Int64? = nil) throws {
        try settleTail()
        if let version {
            try db.runLater(SQL.setVersionAndCount, [.integer(library), .integer(version), .integer(Int64(try count()))])
            countIsDirty = false
        } else if countIsDirty, let cachedCount {
            try db.runLater(SQL.setAlbumCount, [.integer(library), .integer(Int64(cachedCount))])
            countIsDirty = false
        }
    }

    /// Writes the tail bucket's size and forgets the tail, so bucket rows are exact.
    func settleTail() throws {
        if let tail, tail.sizeIsDirty {
            try setSize(of: tail.bucket, library: library)
        }
        tail = nil
    }

    private func setCount(_ count: Int) {
        cachedCount = count
        countIsDirty = true
    }

    // MARK: - Reading

    /// The number of albums.
    func count() throws -> Int {
        if let cachedCount { return cachedCount }
        let count = try db.value(SQL.albumCount, [.integer(library)], as: Int.self) ?? 0
        cachedCount = count
        return count
    }

    /// The position of the album with `id`, or `nil`.
    func index(of id: AlbumID) throws -> Int? {
        try settleTail()
        return try db.value(db.dialect.indexOfAlbum, [.integer(library), .text(id.rawValue)], as: Int.self)
    }

    /// The album at `index`, or `nil` outside `0..<count`.
    func album(at index: Int) throws -> Album? {
        guard index >= 0, index < (try count()) else { return nil }
        let (bucket, offset) = try locate(index)
        return try db.firstRow(
            SQL.albumsInBucket, [.integer(bucket.id), .integer(1), .integer(Int64(offset))], { try StoredRows.album(from: $0) })
    }

    /// Up to `limit` albums from position `offset`, in order.
    func albums(offset: Int, limit: Int) throws -> [Album] {
        guard offset >= 0, limit > 0 else { return [] }
        let total = try count()
        guard offset < total else { return [] }
        var (bucket, skip) = try locate(offset)
        var result: [Album] = []
        result.reserveCapacity(min(limit, total - offset))
        while true {
            let wanted = limit - result.count
            try db.forEachRow(
                SQL.albumsInBucket, [.integer(bucket.id), .integer(Int64(wanted)), .integer(Int64(skip))]
            ) { row in
                result.append(try StoredRows.album(from: row))
            }
            guard result.count < limit,
                  let next = try db.firstRow(SQL.bucketAfter, [.integer(library), .integer(bucket.ord)], { try Bucket(row: $0) })
            else { break }
            bucket = next
            skip = 0
        }
        return result
    }

    /// Calls `body` with every album in order, streaming bucket by bucket.
    func forEachAlbum(_ body: (Album) throws -> Void) throws {
        try settleTail()
        try db.forEachRow(SQL.bucketsForward, [.integer(library)]) { bucketRow in
            let bucket = try Bucket(row: bucketRow)
            try db.forEachRow(SQL.allAlbumsInBucket, [.integer(bucket.id)]) { row in
                try body(try StoredRows.album(from: row))
            }
        }
    }

    // MARK: - Changing the order

    /// Makes room at `index` (in `0...count`; `count` appends) and calls `writeRow` with the
    /// `(bucket, pos)` the new album row must have; then counts it, splitting a bucket that
    /// grew too large.
    func insert(at index: Int, _ writeRow: (_ bucket: Int64, _ position: Int64) throws -> Void) throws {
        let total = try count()
        guard index >= 0, index <= total else {
            throw StorageError(.indexOutOfRange, "insert at \(index) in a library of \(total)")
        }
        if index == total {
            try append(library: library, writeRow)
            return
        }
        var (bucket, offset) = try locate(index)
        let position = try position(forOffset: offset, in: &bucket)
        try writeRow(bucket.id, position)
        bucket.size += 1
        try setSize(of: bucket, library: library)
        setCount(total + 1)
        if bucket.size > layout.maximum {
            try split(bucket, library: library)
        }
    }

    /// Deletes the album row of `id` and closes its gap (an emptied bucket goes, a small one
    /// merges into a neighbour).
    func remove(_ id: AlbumID) throws {
        try settleTail()
        let total = try count()
        guard let (row, bucket) = try db.firstRow(SQL.placeOfAlbum, [.integer(library), .text(id.rawValue)], {
            (try $0.int64(0), Bucket(ord: try $0.int64(1), id: try $0.int64(2), size: try $0.int(3)))
        }) else {
            throw StorageError(.albumNotFound, "no album \(id) to delete")
        }
        try db.run(SQL.deleteAlbumRow, [.integer(row)])
        setCount(total - 1)
        try removed(from: bucket, library: library)
    }

    /// Deletes every album row of the library and its buckets.
    func removeAll() throws {
        tail = nil
        // Other libraries' counts are exact when this is the only library the transaction
        // writes (it holds the write lock); with several, another's may still be cached.
        // (PostgreSQL: other instances write other libraries meanwhile; always by library.)
        let othersHaveAlbums = try !soleWriter || !db.dialect.deletesEveryAlbumWholesale
            || db.value(SQL.otherLibraryHasAlbums, [.integer(library)], as: Bool.self) == true
        if othersHaveAlbums {
            try db.run(SQL.deleteAlbums, [.integer(library)])
        } else {
            try db.run(SQL.deleteEveryAlbum, [])
        }
        try db.run(SQL.deleteBuckets, [.integer(library)])
        setCount(0)
    }

    private func setSize(of bucket: Bucket, library: Int64) throws {
        try db.runLater(SQL.setBucketSize, [.integer(library), .integer(bucket.ord), .integer(Int64(bucket.size))])
    }

    private func count(_ keyPath: WritableKeyPath<AlbumOrderingCounters, Int>) {
        context.count(keyPath)
    }

    // MARK: - Locating

    /// The bucket holding position `index` (in `0..<count`) and the offset in it, walking the
    /// bucket table from whichever end is nearer. Settles the tail first (sizes must be exact).
    /// (PostgreSQL: the walk runs in the database, `SQLDialect.locateBucket`, so one row comes
    /// back instead of the bucket table.)
    func locate(_ index: Int) throws -> (Bucket, Int) {
        try settleTail()
        let total = try count()
        var found: (Bucket, Int)?
        if let (forward, backward) = db.dialect.locateBucket {
            let fromStart = index < total / 2
            let target = fromStart ? index : total - 1 - index
            found = try db.firstRow(fromStart ? forward : backward, [.integer(library), .integer(Int64(target))]) { row in
                let bucket = try Bucket(row: row)
                let passed = try row.int(3)
                return (bucket, fromStart ? target - passed : bucket.size - 1 - (target - passed))
            }
        } else if index < total / 2 {
            var before = 0
            try db.scan(SQL.bucketsForward, [.integer(library)]) { row in
                let bucket = try Bucket(row: row)
                if index < before + bucket.size {
                    found = (bucket, index - before)
                    return false
                }
                before += bucket.size
                return true
            }
        } else {
            let fromEnd = total - 1 - index
            var after = 0
            try db.scan(SQL.bucketsBackward, [.integer(library)]) { row in
                let bucket = try Bucket(row: row)
                if fromEnd < after + bucket.size {
                    found = (bucket, bucket.size - 1 - (fromEnd - after))
                    return false
                }
                after += bucket.size
                return true
            }
        }
        if let found { return found }
        throw StorageError(.corrupt, "bucket sizes do not add up to the count \(total) (looking for \(index))")
    }

    private func positions(in bucket: Bucket, offset: Int, count: Int) throws -> [Int64] {
        try db.query(SQL.positionsAt, [.integer(bucket.id), .integer(Int64(count)), .integer(Int64(offset))]) {
            try $0.int64(0)
        }
    }

    private func lastPosition(in bucket: Bucket) throws -> Int64 {
        guard let last = try db.value(SQL.lastPosition, [.integer(bucket.id)], as: Int64?.self) ?? nil else {
            throw StorageError(.corrupt, "bucket \(bucket.id) has no albums")
        }
        return last
    }

    private func firstPosition(in bucket: Bucket) throws -> Int64 {
        guard let first = try db.value(SQL.firstPosition, [.integer(bucket.id)], as: Int64?.self) ?? nil else {
            throw StorageError(.corrupt, "bucket \(bucket.id) has no albums")
        }
        return first
    }

    /// A free key such that a new album with it lands at `offset` (in `0...size`) of `bucket`,
    /// renumbering the bucket first when its neighbours' keys are adjacent.
    private func position(forOffset offset: Int, in bucket: inout Bucket) throws -> Int64 {
        for _ in 0..<2 {
            if offset == 0 {
                let first = try firstPosition(in: bucket)
                if first - layout.positionGap >= -layout.positionLimit { return first - layout.positionGap }
            } else if offset == bucket.size {
                let last = try lastPosition(in: bucket)
                if last + layout.positionGap <= layout.positionLimit { return last + layout.positionGap }
            } else {
                let around = try positions(in: bucket, offset: offset - 1, count: 2)
                guard around.count == 2 else {
                    throw StorageError(.corrupt, "bucket \(bucket.id) holds fewer albums than its size \(bucket.size)")
                }
                if around[1] - around[0] >= 2 { return around[0] + (around[1] - around[0]) / 2 }
                if try respace(bucket, around: offset) { continue }
            }
            try renumber(bucket)
        }
        throw StorageError(.corrupt, "no free position in bucket \(bucket.id) after renumbering")
    }

    /// Spreads the keys of a window of albums around `offset` (0 < offset < size) evenly
    /// between the keys just outside it, doubling the window until the new spacing is at least
    /// gap/64 (so the next renumbering is again many inserts away). Returns false when the
    /// even the whole bucket between its first and last key is too tight (then the caller
    /// renumbers all of it).
    ///
    /// Inserts piling up at one spot exhaust only the keys there; rewriting a few dozen rows
    /// instead of the whole bucket keeps such inserts cheap (classic list labelling).
    private func respace(_ bucket: Bucket, around offset: Int) throws -> Bool {
        let wanted = max(2, layout.positionGap >> 6)
        var half = 8
        while true {
            // Rows low..<high, between the keys of rows low - 1 and high; the window touches
            // the insertion point (low <= offset <= high), so its gap opens up too.
            let low = max(1, offset - half)
            let high = min(bucket.size - 1, offset + half)
            if low < high {
                let outside = try positions(in: bucket, offset: low - 1, count: 1)
                    + positions(in: bucket, offset: high, count: 1)
                guard outside.count == 2 else {
                    throw StorageError(.corrupt, "bucket \(bucket.id) holds fewer albums than its size \(bucket.size)")
                }
                let step = (outside[1] - outside[0]) / Int64(high - low + 1)
                if step >= wanted {
                    try db.run(SQL.respaceRange, [
                        .integer(bucket.id), .integer(outside[0]), .integer(outside[1]), .integer(step),
                    ])
                    count(\.bucketRespaces)
                    return true
                }
            }
            if low == 1 && high == bucket.size - 1 { break }
            half *= 2
        }
        return false
    }

    /// Rewrites the keys of `bucket` to 0, gap, 2·gap, … (order unchanged).
    private func renumber(_ bucket: Bucket) throws {
        try db.run(SQL.renumberBucket, [.integer(bucket.id), .integer(layout.positionGap)])
        count(\.bucketRenumbers)
    }

    // MARK: - Appending

    /// Appends at the end: fills the last bucket up to the target size, then opens a new one.
    /// `writeRow` inserts the album row with the (bucket, pos) it is given.
    private func append(library: Int64, _ writeRow: (_ bucket: Int64, _ position: Int64) throws -> Void) throws {
        let total = try count()
        if tail == nil, let (last, lastPosition) = try db.firstRow(SQL.lastBucketAndPosition, [.integer(library)], {
            (try Bucket(row: $0), try $0.optionalInt64(3))
        }) {
            guard let lastPosition else { throw StorageError(.corrupt, "bucket \(last.id) has no albums") }
            tail = Tail(bucket: last, lastPosition: lastPosition, sizeIsDirty: false)
        }
        if var current = tail, current.bucket.size < layout.target,
           current.lastPosition + layout.positionGap <= layout.positionLimit
        {
            let position = current.lastPosition + layout.positionGap
            try writeRow(current.bucket.id, position)
            current.lastPosition = position
            current.bucket.size += 1
            current.sizeIsDirty = true
            tail = current
        } else {
            // A new bucket after the last one. The album row goes in first, so a failure
            // (duplicate id) leaves no empty bucket behind.
            try settleTail()
            var ord: Int64 = 0
            if let last = try db.firstRow(SQL.lastBucket, [.integer(library)], { try Bucket(row: $0) }) {
                if last.ord + layout.bucketGap > layout.bucketLimit {
                    try renumberBuckets(library: library)
                }
                let renumbered = try db.firstRow(SQL.lastBucket, [.integer(library)], { try Bucket(row: $0) })
                ord = (renumbered?.ord ?? 0) + layout.bucketGap
            }
            let bucket = Bucket(ord: ord, id: try nextBucketID(), size: 1)
            try writeRow(bucket.id, 0)
            try db.run(SQL.insertBucket, [.integer(library), .integer(ord), .integer(bucket.id), .integer(1)])
            tail = Tail(bucket: bucket, lastPosition: 0, sizeIsDirty: false)
        }
        setCount(total + 1)
    }

    private func nextBucketID() throws -> Int64 {
        try db.value(db.dialect.nextBucketID, [], as: Int64.self) ?? 1
    }

    // MARK: - Splitting

    /// Splits an oversized bucket in two halves. The first bucket of a library gives its lower
    /// half to a new bucket in front of it (repeated inserts at index 0 then never exhaust the
    /// keys between two buckets); any other gives its upper half to a new bucket after it.
    private func split(_ bucket: Bucket, library: Int64) throws {
        var bucket = bucket
        let lowerCount = bucket.size / 2
        let splitPositions = try positions(in: bucket, offset: lowerCount, count: 1)
        guard let splitPosition = splitPositions.first else {
            throw StorageError(.corrupt, "bucket \(bucket.id) holds fewer albums than its size \(bucket.size)")
        }
        let newID = try nextBucketID()
        let previous = try db.firstRow(SQL.bucketBefore, [.integer(library), .integer(bucket.ord)], { try Bucket(row: $0) })
        if previous == nil {
            if bucket.ord - layout.bucketGap < -layout.bucketLimit {
                try renumberBuckets(library: library)
                bucket = try reloaded(bucket)
            }
            try db.run(SQL.moveLowerPart, [.integer(bucket.id), .integer(newID), .integer(splitPosition)])
            try db.run(SQL.insertBucket, [
                .integer(library), .integer(bucket.ord - layout.bucketGap), .integer(newID), .integer(Int64(lowerCount)),
            ])
            bucket.size -= lowerCount
        } else {
            var ord = try ordAfter(bucket, library: library)
            if ord == nil {
                try renumberBuckets(library: library)
                bucket = try reloaded(bucket)
                ord = try ordAfter(bucket, library: library)
            }
            guard let ord else { throw StorageError(.corrupt, "no free bucket key after renumbering") }
            try db.run(SQL.moveUpperPart, [.integer(bucket.id), .integer(newID), .integer(splitPosition)])
            try db.run(SQL.insertBucket, [
                .integer(library), .integer(ord), .integer(newID), .integer(Int64(bucket.size - lowerCount)),
            ])
            bucket.size = lowerCount
        }
        try setSize(of: bucket, library: library)
        count(\.bucketSplits)
    }

    /// A free bucket key between `bucket` and the next one, or `nil` when they are adjacent.
    private func ordAfter(_ bucket: Bucket, library: Int64) throws -> Int64? {
        guard let next = try db.firstRow(SQL.bucketAfter, [.integer(library), .integer(bucket.ord)], { try Bucket(row: $0) })
        else {
            return bucket.ord + layout.bucketGap <= layout.bucketLimit ? bucket.ord + layout.bucketGap : nil
        }
        return next.ord - bucket.ord >= 2 ? bucket.ord + (next.ord - bucket.ord) / 2 : nil
    }

    private func reloaded(_ bucket: Bucket) throws -> Bucket {
        guard let fresh = try db.firstRow(SQL.bucketByID, [.integer(bucket.id)], { try Bucket(row: $0) }) else {
            throw StorageError(.corrupt, "bucket \(bucket.id) vanished")
        }
        return fresh
    }

    /// Rewrites the bucket keys of `library` to 0, gap, 2·gap, … (order unchanged). The keys
    /// are a primary key, so the rows are deleted and inserted again rather than updated in
    /// place (an in-place update could collide with a key not yet rewritten). Rare: only when
    /// 32 successive splits fell between the same two buckets.
    private func renumberBuckets(library: Int64) throws {
        let buckets = try db.query(SQL.bucketsForward, [.integer(library)], { try Bucket(row: $0) })
        try db.run(SQL.deleteBuckets, [.integer(library)])
        for (index, bucket) in buckets.enumerated() {
            try db.run(SQL.insertBucket, [
                .integer(library), .integer(Int64(index) * layout.bucketGap), .integer(bucket.id), .integer(Int64(bucket.size)),
            ])
        }
        count(\.orderRenumbers)
    }

    // MARK: - Removing

    /// Updates `bucket` (as it was before) after one of its albums was deleted: removes it
    /// when empty, merges it into a neighbour when small.
    private func removed(from bucket: Bucket, library: Int64) throws {
        var bucket = bucket
        bucket.size -= 1
        if bucket.size == 0 {
            try db.run(SQL.deleteBucket, [.integer(library), .integer(bucket.ord)])
            return
        }
        try setSize(of: bucket, library: library)
        if bucket.size <= layout.minimum {
            try mergeIfPossible(bucket, library: library)
        }
    }

    /// Moves every album of a small `bucket` into its smaller neighbour when together they fit
    /// in the target size, shifting their keys past the neighbour's.
    private func mergeIfPossible(_ bucket: Bucket, library: Int64) throws {
        let previous = try db.firstRow(SQL.bucketBefore, [.integer(library), .integer(bucket.ord)], { try Bucket(row: $0) })
        let next = try db.firstRow(SQL.bucketAfter, [.integer(library), .integer(bucket.ord)], { try Bucket(row: $0) })
        let fits = { (candidate: Bucket?) -> Bucket? in
            guard let candidate, candidate.size + bucket.size <= self.layout.target else { return nil }
            return candidate
        }
        let into: Bucket
        let intoPrevious: Bool
        switch (fits(previous), fits(next)) {
        case (let p?, let n?): (into, intoPrevious) = p.size <= n.size ? (p, true) : (n, false)
        case (let p?, nil): (into, intoPrevious) = (p, true)
        case (nil, let n?): (into, intoPrevious) = (n, false)
        case (nil, nil): return
        }
        var shift = try mergeShift(bucket, into: into, intoPrevious: intoPrevious)
        if shift == nil {
            try renumber(bucket)
            try renumber(into)
            shift = try mergeShift(bucket, into: into, intoPrevious: intoPrevious)
        }
        guard let shift else { throw StorageError(.corrupt, "no room to merge bucket \(bucket.id)") }
        try db.run(SQL.moveBucketShifted, [.integer(bucket.id), .integer(into.id), .integer(shift)])
        var merged = into
        merged.size += bucket.size
        try setSize(of: merged, library: library)
        try db.run(SQL.deleteBucket, [.integer(library), .integer(bucket.ord)])
        count(\.bucketMerges)
    }

    /// The amount to add to the keys of `bucket` so they come after (or before) all keys of
    /// `into`, or `nil` when the shifted keys would leave ±limit.
    private func mergeShift(_ bucket: Bucket, into: Bucket, intoPrevious: Bool) throws -> Int64? {
        let first = try firstPosition(in: bucket)
        let last = try lastPosition(in: bucket)
        if intoPrevious {
            let shift = try lastPosition(in: into) + layout.positionGap - first
            return last + shift <= layout.positionLimit ? shift : nil
        } else {
            let shift = try firstPosition(in: into) - layout.positionGap - last
            return first + shift >= -layout.positionLimit ? shift : nil
        }
    }
}
