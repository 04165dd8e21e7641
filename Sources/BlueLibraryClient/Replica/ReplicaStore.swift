import Foundation
import SQLite

/// The replica's SQLite file: two album lists in order and the outbox (schema in
/// `LibraryReplica`'s note). `position` is an order key, not the index: keys are spread out
/// (`keyGap` apart) and an insert or move takes the key halfway between its new neighbours, so
/// a local edit writes one row however long the list (the index is the key's rank). Owned by
/// one `LibraryReplica` (not shared between threads).
struct ReplicaStore {
    /// Which of the two lists: the server's state at `version`, or what the app sees.
    enum Table: String {
        case base = "base_albums"
        case local = "albums"
    }

    let db: Connection

    init(path: String) throws {
        db = try Connection(path: path)
        try db.execute("PRAGMA journal_mode = WAL")
        // WAL with NORMAL: a commit is safe from an app crash at once and reaches the disk at
        // the next checkpoint, so a local edit or a pushed entry's removal costs no fsync. A
        // power loss may take back the last few commits: a local edit the app showed, or the
        // removal of entries already pushed, which are then sent again (an add with its own
        // Idempotency-Key answers its first result; deletes, moves and patches repeat to the
        // same state).
        try db.execute("PRAGMA synchronous = NORMAL")
        var migrator = Migrator()
        migrator.register("replica-1") { db in
            for table in ["base_albums", "albums"] {
                try db.execute("""
                    CREATE TABLE \(table) (id TEXT PRIMARY KEY, position INTEGER NOT NULL, json TEXT NOT NULL,
                                           stale INTEGER NOT NULL DEFAULT 0);
                    CREATE INDEX \(table)_position ON \(table)(position);
                    """)
            }
            try db.execute("""
                CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, operation TEXT NOT NULL,
                                     idempotency_key TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0);
                """)
        }
        // When a queued add's Idempotency-Key was first found held by an interrupted request.
        migrator.register("replica-2") { db in
            try db.execute("ALTER TABLE outbox ADD COLUMN blocked_since REAL")
        }
        // The album each entry concerns, indexed: renaming a pushed add's local id in the
        // entries after it reads only those (was a scan of every entry's JSON per pushed add).
        migrator.register("replica-3") { db in
            try db.execute("ALTER TABLE outbox ADD COLUMN album_id TEXT")
            let entries = try db.query("SELECT seq, operation FROM outbox") { row in
                (seq: try row.int64(0), id: try Self.decodeOperation(try row.string(1)).albumID)
            }
            for entry in entries {
                try db.run("UPDATE outbox SET album_id = ? WHERE seq = ?", [.text(entry.id), .integer(entry.seq)])
            }
            try db.execute("CREATE INDEX outbox_album ON outbox(album_id)")
        }
        // The order index holds the id too: finding the neighbours at an index (`freeKey`, an
        // OFFSET walk that skips one id) reads only the index, not a table row per album passed.
        migrator.register("replica-4") { db in
            for table in ["base_albums", "albums"] {
                try db.execute("DROP INDEX \(table)_position; CREATE INDEX \(table)_position ON \(table)(position, id)")
            }
        }
        try migrator.migrate(db)
    }

    // MARK: - Meta

    func meta(_ key: String) throws -> String? {
        try db.scalar("SELECT value FROM meta WHERE key = ?", [.text(key)], as: String.self)
    }

    func setMeta(_ key: String, _ value: String) throws {
        try db.run("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                   [.text(key), .text(value)])
    }

    // MARK: - Album lists

    func count(_ table: Table) throws -> Int {
        try db.scalar("SELECT count(*) FROM \(table.rawValue)", as: Int.self) ?? 0
    }

    func album(_ table: Table, id: String) throws -> AlbumResource? {
        try db.firstRow("SELECT json, position FROM \(table.rawValue) WHERE id = ?", [.text(id)]) { row in
            var album = try Self.decode(try row.string(0))
            album.index = try rank(table, key: try row.int64(1))
            return album
        }
    }

    /// Every album of `table` in order, each with its `index`.
    func albums(_ table: Table) throws -> [AlbumResource] {
        var index = 0
        return try db.query("SELECT json FROM \(table.rawValue) ORDER BY position") { row in
            var album = try Self.decode(try row.string(0))
            album.index = index
            index += 1
            return album
        }
    }

    /// Inserts `album` at `index` (clamped to 0...count); answers the index it got.
    @discardableResult
    func insert(_ table: Table, _ album: AlbumResource, at index: Int?, stale: Bool = false) throws -> Int {
        let count = try count(table)
        let at = min(max(index ?? count, 0), count)
        let key = try freeKey(table, at: at, excluding: nil)
        try db.run("INSERT INTO \(table.rawValue) (id, position, json, stale) VALUES (?, ?, ?, ?)",
                   [.text(album.id), .integer(key), .text(try Self.encode(Self.plain(album))), .integer(stale ? 1 : 0)])
        return at
    }

    /// Removes the album; false when it is not there.
    @discardableResult
    func remove(_ table: Table, id: String) throws -> Bool {
        try db.run("DELETE FROM \(table.rawValue) WHERE id = ?", [.text(id)])
        return db.changes > 0
    }

    /// Moves the album to `index` (clamped to the last index); false when it is not there.
    @discardableResult
    func move(_ table: Table, id: String, to index: Int) throws -> Bool {
        guard try db.scalar("SELECT 1 FROM \(table.rawValue) WHERE id = ?", [.text(id)], as: Int.self) != nil else { return false }
        let to = min(max(index, 0), try count(table) - 1)
        let key = try freeKey(table, at: to, excluding: id)
        try db.run("UPDATE \(table.rawValue) SET position = ? WHERE id = ?", [.integer(key), .text(id)])
        return true
    }

    // MARK: Order keys

    /// The distance between neighbouring order keys after a reload or a renumbering: room for
    /// 20 inserts into the same gap before the list is renumbered.
    static let keyGap: Int64 = 1 << 20

    /// The index of the album whose order key is `key`.
    private func rank(_ table: Table, key: Int64) throws -> Int {
        try db.scalar("SELECT count(*) FROM \(table.rawValue) WHERE position < ?", [.integer(key)], as: Int.self) ?? 0
    }

    /// An order key that puts an album at `index` of the list without `excluding`: halfway
    /// between its neighbours there (the list is renumbered when they are adjacent). So an
    /// insert, move or delete writes one row, not every row after it.
    private func freeKey(_ table: Table, at index: Int, excluding id: String?) throws -> Int64 {
        for _ in 0..<2 {
            let keys = try db.query("SELECT position FROM \(table.rawValue) WHERE id IS NOT ? ORDER BY position LIMIT ? OFFSET ?",
                                    [id.map { .text($0) } ?? .null, .integer(index == 0 ? 1 : 2), .integer(Int64(max(index - 1, 0)))]) {
                try $0.int64(0)
            }
            let before = index == 0 ? nil : keys.first
            let after = index == 0 ? keys.first : keys.dropFirst().first
            switch (before, after) {
            case (nil, nil): return 0
            case let (before?, nil): return before + Self.keyGap
            case let (nil, after?): return after - Self.keyGap
            case let (before?, after?) where after - before > 1: return before + (after - before) / 2
            default: try renumber(table)
            }
        }
        throw ReplicaError.storage("the order keys of \(table.rawValue) are not increasing; the replica file was changed by something else")
    }

    /// Spreads the order keys out again (`keyGap` apart), keeping the order.
    private func renumber(_ table: Table) throws {
        let ids = try db.query("SELECT id FROM \(table.rawValue) ORDER BY position") { try $0.string(0) }
        for (rank, id) in ids.enumerated() {
            try db.run("UPDATE \(table.rawValue) SET position = ? WHERE id = ?", [.integer(Int64(rank) * Self.keyGap), .text(id)])
        }
    }

    // MARK: Many edits in a row

    /// Every order key of `table` in order, with its album's id: for a run of many inserts,
    /// moves and deletes (a pushed batch's answer, a page of the change feed, the outbox
    /// replayed), which then find their neighbours by index in memory instead of an OFFSET
    /// walk and a count per edit. Each edit still writes one row, with the key `freeKey` would
    /// choose.
    func order(_ table: Table) throws -> ListOrder {
        var order = ListOrder()
        try db.forEachRow("SELECT position, id FROM \(table.rawValue) ORDER BY position") { row in
            order.keys.append(try row.int64(0))
            order.ids.append(try row.string(1))
        }
        return order
    }

    /// `insert(_:_:at:stale:)` with `order` kept up to date.
    @discardableResult
    func insert(_ table: Table, _ album: AlbumResource, at index: Int?, stale: Bool = false, order: inout ListOrder) throws -> Int {
        let count = order.keys.count
        let at = min(max(index ?? count, 0), count)
        let key = try freeKey(table, at: at, in: &order)
        try db.run("INSERT INTO \(table.rawValue) (id, position, json, stale) VALUES (?, ?, ?, ?)",
                   [.text(album.id), .integer(key), .text(try Self.encode(Self.plain(album))), .integer(stale ? 1 : 0)])
        order.insert(key: key, id: album.id, at: at)
        return at
    }

    /// `remove(_:id:)` with `order` kept up to date.
    @discardableResult
    func remove(_ table: Table, id: String, order: inout ListOrder) throws -> Bool {
        guard let key = try position(table, id: id) else { return false }
        try db.run("DELETE FROM \(table.rawValue) WHERE id = ?", [.text(id)])
        if let at = order.index(ofKey: key, id: id) { order.remove(at: at) }
        return true
    }

    /// `move(_:id:to:)` with `order` kept up to date.
    @discardableResult
    func move(_ table: Table, id: String, to index: Int, order: inout ListOrder) throws -> Bool {
        guard let key = try position(table, id: id) else { return false }
        let to = min(max(index, 0), order.keys.count - 1)
        // The list without the album, as `freeKey(excluding:)` sees it.
        if let from = order.index(ofKey: key, id: id) { order.remove(at: from) }
        let free = try freeKey(table, at: to, in: &order, excluding: id)
        try db.run("UPDATE \(table.rawValue) SET position = ? WHERE id = ?", [.integer(free), .text(id)])
        order.insert(key: free, id: id, at: to)
        return true
    }

    private func position(_ table: Table, id: String) throws -> Int64? {
        try db.scalar("SELECT position FROM \(table.rawValue) WHERE id = ?", [.text(id)], as: Int64.self)
    }

    /// `freeKey(_:at:excluding:)` from `order` (which leaves `excluding` out already); after a
    /// renumbering `order` is read again.
    private func freeKey(_ table: Table, at index: Int, in order: inout ListOrder, excluding id: String? = nil) throws -> Int64 {
        for _ in 0..<2 {
            let before = index == 0 ? nil : order.keys[index - 1]
            let after = index < order.keys.count ? order.keys[index] : nil
            switch (before, after) {
            case (nil, nil): return 0
            case let (before?, nil): return before + Self.keyGap
            case let (nil, after?): return after - Self.keyGap
            case let (before?, after?) where after - before > 1: return before + (after - before) / 2
            default:
                try renumber(table)
                order = try self.order(table)
                if let id, let at = order.ids.firstIndex(of: id) { order.remove(at: at) }
            }
        }
        throw ReplicaError.storage("the order keys of \(table.rawValue) are not increasing; the replica file was changed by something else")
    }

    /// Replaces the album's fields (its position stays) and clears `stale`; false when it is not there.
    @discardableResult
    func replaceFields(_ table: Table, _ album: AlbumResource) throws -> Bool {
        try db.run("UPDATE \(table.rawValue) SET json = ?, stale = 0 WHERE id = ?", [.text(try Self.encode(Self.plain(album))), .text(album.id)])
        return db.changes > 0
    }

    func markStale(_ table: Table, id: String) throws {
        try db.run("UPDATE \(table.rawValue) SET stale = 1 WHERE id = ?", [.text(id)])
    }

    func staleIDs(_ table: Table) throws -> [String] {
        try db.query("SELECT id FROM \(table.rawValue) WHERE stale = 1 ORDER BY position") { try $0.string(0) }
    }

    func clear(_ table: Table) throws {
        try db.run("DELETE FROM \(table.rawValue)")
    }

    /// `local` becomes a copy of `base`.
    func copyBaseToLocal() throws {
        try clear(.local)
        try db.run("INSERT INTO albums (id, position, json, stale) SELECT id, position, json, 0 FROM base_albums")
    }

    /// `base` becomes `albums`, in this order (their `index` is not kept, nor their `library`
    /// unless `keepingLibrary`: a view's replica keeps which library holds each album).
    func replaceBase(with albums: [AlbumResource], keepingLibrary: Bool = false) throws {
        try clear(.base)
        for (position, album) in albums.enumerated() {
            var kept = Self.plain(album)
            if keepingLibrary { kept.library = album.library }
            try db.run("INSERT INTO base_albums (id, position, json, stale) VALUES (?, ?, ?, 0)",
                       [.text(album.id), .integer(Int64(position) * Self.keyGap), .text(try Self.encode(kept))])
        }
    }

    /// `album` without the list-dependent `index` and `library`, as the tables keep it.
    static func plain(_ album: AlbumResource) -> AlbumResource {
        var album = album
        album.index = nil
        album.library = nil
        return album
    }

    /// The album `old` becomes `album` (the server's answer to its add: another id, the
    /// server's fields), `stale` cleared, its position kept: `rename` and `replaceFields` in
    /// one write. Nothing when `old` is not there.
    func replace(_ table: Table, id old: String, with album: AlbumResource) throws {
        try db.run("UPDATE \(table.rawValue) SET id = ?, json = ?, stale = 0 WHERE id = ?",
                   [.text(album.id), .text(try Self.encode(Self.plain(album))), .text(old)])
    }

    func rename(_ table: Table, from old: String, to new: String) throws {
        guard var album = try album(table, id: old) else { return }
        album.id = new
        album.index = nil
        try db.run("UPDATE \(table.rawValue) SET id = ?, json = ? WHERE id = ?", [.text(new), .text(try Self.encode(album)), .text(old)])
    }

    // MARK: - Outbox

    func enqueue(_ operation: ReplicaOperation, key: String) throws {
        try db.run("INSERT INTO outbox (operation, idempotency_key, album_id) VALUES (?, ?, ?)",
                   [.text(try Self.encode(operation)), .text(key), .text(operation.albumID)])
    }

    /// The queued operations, oldest first.
    func outbox() throws -> [OutboxEntry] {
        try db.query("SELECT seq, operation, idempotency_key, attempts, blocked_since FROM outbox ORDER BY seq") { row in
            try Self.entry(row)
        }
    }

    func first() throws -> OutboxEntry? {
        try db.firstRow("SELECT seq, operation, idempotency_key, attempts, blocked_since FROM outbox ORDER BY seq LIMIT 1") { row in
            try Self.entry(row)
        }
    }

    func last() throws -> OutboxEntry? {
        try db.firstRow("SELECT seq, operation, idempotency_key, attempts, blocked_since FROM outbox ORDER BY seq DESC LIMIT 1") { row in
            try Self.entry(row)
        }
    }

    static func entry(_ row: Row) throws -> OutboxEntry {
        let blocked: Double? = if case let .real(since) = row.value(4) { since } else { nil }
        return OutboxEntry(seq: try row.int64(0), operation: try decodeOperation(try row.string(1)), idempotencyKey: try row.string(2),
                           attempts: try row.int(3), blockedSince: blocked.map { Date(timeIntervalSince1970: $0) })
    }

    // MARK: - Push batches

    /// The next batch to push: the entries of a batch sent before and not yet recorded (the
    /// app stopped, or the server did not answer), exactly as they were with the same key, so a
    /// batch that committed with its answer lost is answered again, never applied twice;
    /// otherwise the oldest `limit` entries under a new key, remembered (in `meta`) before
    /// anything is sent. Nil when the outbox is empty.
    func nextPushBatch(limit: Int) throws -> PushBatch? {
        guard let first = try first() else { return nil }
        if let pending = try meta(Self.pushBatchKey), let range = PushBatch.range(fromMeta: pending), range.first == first.seq {
            let entries = try db.query(
                "SELECT seq, operation, idempotency_key, attempts, blocked_since FROM outbox WHERE seq BETWEEN ? AND ? ORDER BY seq",
                [.integer(range.first), .integer(range.last)]) { row in try Self.entry(row) }
            return PushBatch(key: range.key, entries: entries)
        }
        let entries = try db.query(
            "SELECT seq, operation, idempotency_key, attempts, blocked_since FROM outbox ORDER BY seq LIMIT ?",
            [.integer(Int64(limit))]) { row in try Self.entry(row) }
        let batch = PushBatch(key: "replica-batch-" + UUID().uuidString, entries: entries)
        try setMeta(Self.pushBatchKey, batch.meta)
        return batch
    }

    /// Whether the entry `seq` belongs to a batch sent and not yet recorded.
    func isInPushBatch(_ seq: Int64) throws -> Bool {
        guard let pending = try meta(Self.pushBatchKey), let range = PushBatch.range(fromMeta: pending) else { return false }
        return seq >= range.first && seq <= range.last
    }

    /// Forgets the batch in flight (its outcomes are recorded).
    func clearPushBatch() throws {
        try db.run("DELETE FROM meta WHERE key = ?", [.text(Self.pushBatchKey)])
    }

    private static let pushBatchKey = "push_batch"

    /// Records when the entry's key was first found held by an interrupted request.
    func setBlocked(_ seq: Int64, since date: Date) throws {
        try db.run("UPDATE outbox SET blocked_since = ? WHERE seq = ?", [.real(date.timeIntervalSince1970), .integer(seq)])
    }

    /// Gives the entry a new Idempotency-Key (its old one is stuck on the server) and clears `blocked_since`.
    func rekey(_ seq: Int64, to key: String) throws {
        try db.run("UPDATE outbox SET idempotency_key = ?, blocked_since = NULL WHERE seq = ?", [.text(key), .integer(seq)])
    }

    /// Whether either list holds an album with `id`.
    func knows(_ id: String) throws -> Bool {
        try db.scalar("SELECT EXISTS (SELECT 1 FROM base_albums WHERE id = ?1) OR EXISTS (SELECT 1 FROM albums WHERE id = ?1)",
                      [.text(id)], as: Bool.self) ?? false
    }

    func outboxCount() throws -> Int {
        try db.scalar("SELECT count(*) FROM outbox", as: Int.self) ?? 0
    }

    func removeFromOutbox(_ seq: Int64) throws {
        try db.run("DELETE FROM outbox WHERE seq = ?", [.integer(seq)])
    }

    func countAttempt(_ seq: Int64) throws {
        try db.run("UPDATE outbox SET attempts = attempts + 1 WHERE seq = ?", [.integer(seq)])
    }

    /// Every queued operation on album `old` now names `new` (a local add got its server id).
    /// Only the entries on `old` are read (through the `album_id` index), so a push of many
    /// adds does not read the whole outbox for each.
    ///
    /// A delete, move or patch keeps its album id as `"id":"…"` (the only unescaped `"id":` of
    /// its JSON: strings inside a patch escape their quotes), so SQL rewrites it in place; an
    /// add (never one here in a push: its own entry is gone by then) is decoded and encoded.
    func renameInOutbox(from old: String, to new: String) throws {
        try db.run("""
            UPDATE outbox SET operation = replace(operation, '"id":' || ?1, '"id":' || ?2), album_id = ?3
            WHERE album_id = ?4 AND operation NOT LIKE '{"add":%'
            """, [.text(try Self.encode(old)), .text(try Self.encode(new)), .text(new), .text(old)])
        let entries = try db.query("SELECT seq, operation FROM outbox WHERE album_id = ?", [.text(old)]) { row in
            (seq: try row.int64(0), operation: try Self.decodeOperation(try row.string(1)))
        }
        for entry in entries {
            try db.run("UPDATE outbox SET operation = ?, album_id = ? WHERE seq = ?",
                       [.text(try Self.encode(entry.operation.renamed(to: new))), .text(new), .integer(entry.seq)])
        }
    }

    // MARK: - JSON

    static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func decode(_ text: String) throws -> AlbumResource {
        try JSONDecoder().decode(AlbumResource.self, from: Data(text.utf8))
    }

    static func decodeOperation(_ text: String) throws -> ReplicaOperation {
        try JSONDecoder().decode(ReplicaOperation.self, from: Data(text.utf8))
    }
}

/// The order keys of a list in order, each with its album's id (`ReplicaStore.order`).
struct ListOrder {
    var keys: [Int64] = []
    var ids: [String] = []

    mutating func insert(key: Int64, id: String, at index: Int) {
        keys.insert(key, at: index)
        ids.insert(id, at: index)
    }

    mutating func remove(at index: Int) {
        keys.remove(at: index)
        ids.remove(at: index)
    }

    /// Where the album `id` with order key `key` is (a binary search by key).
    func index(ofKey key: Int64, id: String) -> Int? {
        var low = 0
        var high = keys.count
        while low < high {
            let middle = (low + high) / 2
            if keys[middle] < key { low = middle + 1 } else { high = middle }
        }
        var at = low
        while at < keys.count, keys[at] == key {
            if ids[at] == id { return at }
            at += 1
        }
        return ids.firstIndex(of: id)
    }
}

/// One queued local mutation.
struct OutboxEntry {
    var seq: Int64
    var operation: ReplicaOperation
    var idempotencyKey: String
    var attempts: Int
    /// For an add: when its key was first found held by an interrupted request (409), else nil.
    var blockedSince: Date?
}

/// Outbox entries pushed together in one `POST /batch`, under one Idempotency-Key.
struct PushBatch {
    var key: String
    var entries: [OutboxEntry]

    /// How `meta` keeps it while it is in flight: `first-seq last-seq key`.
    var meta: String { "\(entries.first?.seq ?? 0) \(entries.last?.seq ?? 0) \(key)" }

    /// The range and key of a batch in flight, from `meta`.
    static func range(fromMeta text: String) -> (first: Int64, last: Int64, key: String)? {
        let parts = text.split(separator: " ")
        guard parts.count == 3, let first = Int64(parts[0]), let last = Int64(parts[1]) else { return nil }
        return (first, last, String(parts[2]))
    }
}
