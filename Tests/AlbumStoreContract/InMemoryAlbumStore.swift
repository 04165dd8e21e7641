import BlueLibraryAPI
import Essentials
import Foundation
import Library
import ServerRecords

/// An `AlbumStore` over plain arrays, for tests only (never shipped in Sources).
///
/// Transactions work on copies of the libraries' data and commit by swapping them in, so a
/// throw from the body (or an injected commit failure) leaves nothing behind — the same
/// contract the SQLite store keeps. Every call holds one lock, so reads and writes of any set
/// of libraries are serialised (one snapshot, one transaction).
///
/// Catalog rules (as SQLite): `default` always exists; reading or writing a library that does
/// not exist throws `LibraryError.libraryNotFound`; a deleted library's last version is kept,
/// and a library created again with its id starts one above it (versions never repeat for an
/// id); album ids are unique across libraries; `default` cannot be deleted (`.conflict`).
// @unchecked because every access to the mutable state happens under `lock`.
public final class InMemoryAlbumStore: AlbumStore, @unchecked Sendable {
    public struct LibraryData {
        public var albums: [Album] = []
        public var version: Int64 = 0
        public var undo: [UndoCommand] = []
        public var states: [String: SavedState] = [:]
        /// The change feed, oldest first.
        public var changes: [LibraryChange] = []
        /// The articles the artist sort ignores (`setSortArticles`).
        public var sortArticles = SortArticles.standard
    }

    /// Thrown by `write` when `failNextCommit` is set: the body ran but nothing is committed.
    public struct CommitFailure: Error, Equatable {}

    private let lock = NSLock()
    /// Every existing library's committed data.
    private var libraryData: [LibraryID: LibraryData] = [.default: LibraryData()]
    /// Display names of the existing libraries.
    private var names: [LibraryID: String] = [.default: LibraryID.default.rawValue]
    /// The last version of each deleted library (a re-created one continues above it).
    private var retiredVersions: [LibraryID: Int64] = [:]
    private var viewDefinitions: [ViewID: ViewDefinition] = [:]
    private var _writeCount = 0
    private var _failNextCommit = false

    /// Committed write transactions so far (catalog calls included).
    public var writeCount: Int { lock.withLock { _writeCount } }
    private var _readCount = 0
    /// Read transactions so far.
    public var readCount: Int { lock.withLock { _readCount } }

    /// Makes the next `write` run its body and then fail instead of committing.
    public func failNextCommit() { lock.withLock { _failNextCommit = true } }

    /// A committed snapshot of one library, for assertions (empty for a missing library).
    public func data(_ library: LibraryID = .default) -> LibraryData {
        lock.withLock { libraryData[library] ?? LibraryData() }
    }

    /// Where a request's `Idempotency-Key` is claimed with each committed write, as the SQL
    /// stores claim it in the write's transaction (nil: nowhere).
    private let idempotency: InMemoryIdempotencyStore?

    public init(idempotency: InMemoryIdempotencyStore? = nil) {
        self.idempotency = idempotency
    }

    /// Runs a write under the lock and claims the request's pending key with it: a write that
    /// throws claims nothing, and a claim that fails undoes the write.
    private func committing<T>(_ body: () throws -> T) throws -> T {
        try lock.withLock {
            let before = (libraryData, names, retiredVersions, viewDefinitions)
            let result = try body()
            if let claim = IdempotencyKeyClaim.pending, let idempotency {
                do {
                    try idempotency.claim(claim)
                } catch {
                    (libraryData, names, retiredVersions, viewDefinitions) = before
                    throw error
                }
                claim.markCommitted()
            }
            return result
        }
    }

    // MARK: - Transactions

    public func read<T>(_ libraries: [LibraryID], _ body: ([any AlbumStoreReader]) throws -> T) throws -> T {
        try lock.withLock {
            _readCount += 1
            let context = try open(libraries)
            return try body(context.transactions)
        }
    }

    public func write<T>(_ libraries: [LibraryID], _ body: ([any AlbumStoreWriter]) throws -> T) throws -> T {
        try committing {
            let context = try open(libraries)
            let result = try body(context.transactions)
            if _failNextCommit {
                _failNextCommit = false
                throw CommitFailure()
            }
            for transaction in context.transactions { libraryData[transaction.library] = transaction.data }
            _writeCount += 1
            return result
        }
    }

    /// Transactions over copies of `libraries` (caller holds the lock).
    private func open(_ libraries: [LibraryID]) throws -> Context {
        precondition(Set(libraries).count == libraries.count, "libraries must not repeat")
        let context = Context(committed: libraryData)
        for library in libraries {
            guard let data = libraryData[library] else { throw LibraryError.libraryNotFound(library) }
            context.transactions.append(Transaction(data, library: library, context: context))
        }
        return context
    }

    // MARK: - Catalog

    public func libraries() throws -> [LibraryRecord] {
        lock.withLock {
            libraryData.keys.sorted().map { record($0) }
        }
    }

    public func createLibrary(_ id: LibraryID, name: String) throws -> LibraryRecord {
        try committing {
            guard libraryData[id] == nil else { throw LibraryError.conflict("a library with id \"\(id)\" exists already") }
            var data = LibraryData()
            if let retired = retiredVersions.removeValue(forKey: id) { data.version = retired + 1 }
            libraryData[id] = data
            names[id] = name
            _writeCount += 1
            return record(id)
        }
    }

    public func renameLibrary(_ id: LibraryID, name: String) throws -> LibraryRecord {
        try committing {
            guard libraryData[id] != nil else { throw LibraryError.libraryNotFound(id) }
            names[id] = name
            _writeCount += 1
            return record(id)
        }
    }

    public func deleteLibrary(_ id: LibraryID, onlyIfEmpty: Bool) throws {
        try committing {
            guard id != .default else { throw LibraryError.conflict("the default library cannot be deleted") }
            guard let held = libraryData[id] else { throw LibraryError.libraryNotFound(id) }
            if onlyIfEmpty, !held.albums.isEmpty { throw LibraryError.libraryNotEmpty(id, count: held.albums.count) }
            guard let data = libraryData.removeValue(forKey: id) else { throw LibraryError.libraryNotFound(id) }
            names[id] = nil
            retiredVersions[id] = data.version
            _writeCount += 1
        }
    }

    public func views() throws -> [ViewDefinition] {
        lock.withLock { viewDefinitions.values.sorted { $0.id < $1.id } }
    }

    public func saveView(_ view: ViewDefinition) throws {
        try committing {
            viewDefinitions[view.id] = view
            _writeCount += 1
        }
    }

    public func saveView(_ view: ViewDefinition, expecting previousRevision: Int64?) throws -> Bool {
        try committing {
            guard viewDefinitions[view.id]?.revision == previousRevision else { return false }
            viewDefinitions[view.id] = view
            _writeCount += 1
            return true
        }
    }

    public func deleteView(_ id: ViewID) throws -> Bool {
        try committing {
            guard viewDefinitions.removeValue(forKey: id) != nil else { return false }
            _writeCount += 1
            return true
        }
    }

    /// The catalog record of an existing library (caller holds the lock).
    private func record(_ id: LibraryID) -> LibraryRecord {
        let data = libraryData[id] ?? LibraryData()
        return LibraryRecord(id: id, name: names[id] ?? id.rawValue, albumCount: data.albums.count, version: data.version)
    }

    // MARK: - Transaction state

    /// What the transactions of one `read`/`write` share: the committed data of every library
    /// and the open transactions, so a lookup across libraries sees this transaction's changes.
    final class Context {
        let committed: [LibraryID: LibraryData]
        var transactions: [Transaction] = []

        init(committed: [LibraryID: LibraryData]) { self.committed = committed }

        /// The library that holds `id`, as this transaction sees it.
        func library(of id: AlbumID) -> LibraryID? {
            for transaction in transactions where transaction.data.albums.contains(where: { $0.id == id }) {
                return transaction.library
            }
            let open = Set(transactions.map(\.library))
            for (library, data) in committed where !open.contains(library) {
                if data.albums.contains(where: { $0.id == id }) { return library }
            }
            return nil
        }
    }

    /// One library's private copy of the data within a transaction.
    final class Transaction: AlbumStoreWriter {
        struct IntegrityError: Error, CustomStringConvertible {
            var description: String
        }

        let library: LibraryID
        var data: LibraryData
        private unowned let context: Context

        init(_ data: LibraryData, library: LibraryID, context: Context) {
            self.data = data
            self.library = library
            self.context = context
        }

        func version() throws -> Int64 { data.version }
        func count() throws -> Int { data.albums.count }
        func sortArticles() throws -> SortArticles { data.sortArticles }

        func setSortArticles(_ articles: SortArticles) throws -> Bool {
            let old = data.sortArticles
            data.sortArticles = articles
            return data.albums.contains {
                SortText.artistKey($0.artist, ignoring: old) != SortText.artistKey($0.artist, ignoring: articles)
            }
        }

        /// `album`'s key in `sort` (a value sort).
        private func key(_ album: Album, _ sort: AlbumSort) -> SortKey {
            SortKey.of(album, for: sort.field, articles: data.sortArticles, search: sort.search) ?? SortKey(.integer(0), album.id)
        }

        /// Whether `a` comes before `b` in `sort` (a value sort).
        private func orders(_ sort: AlbumSort, _ a: Album, _ b: Album) -> Bool {
            sort.orders(key(a, sort), before: key(b, sort))
        }
        func album(id: AlbumID) throws -> Album? { data.albums.first { $0.id == id } }
        func library(of id: AlbumID) throws -> LibraryID? { context.library(of: id) }
        func index(of id: AlbumID) throws -> Int? { data.albums.firstIndex { $0.id == id } }
        func album(at index: Int) throws -> Album? { data.albums.indices.contains(index) ? data.albums[index] : nil }

        func albums(offset: Int, limit: Int) throws -> [Album] {
            guard offset >= 0, limit > 0, offset < data.albums.count else { return [] }
            return Array(data.albums[offset..<min(offset + limit, data.albums.count)])
        }

        func albums(matching filter: AlbumFilter, sort: AlbumSort, from anchor: SortAnchor, limit: Int) throws -> [Album]? {
            guard limit > 0 else {
                if case let .afterAlbum(id) = anchor, try album(id: id) == nil { return nil }
                return []
            }
            var ordered = data.albums.filter(filter.matches)
            if sort.field != .position {
                ordered.sort { orders(sort, $0, $1) }
            } else if sort.descending {
                ordered.reverse()
            }
            switch anchor {
            case .start:
                break
            case let .offset(n):
                ordered = Array(ordered.dropFirst(max(0, n)))
            case let .afterAlbum(id) where sort.field != .position:
                // After the album's current key in this order (as SQLite does).
                guard let anchor = try album(id: id) else { return nil }
                ordered = ordered.filter { orders(sort, anchor, $0) }
            case let .afterAlbum(id):
                guard let after = listedAfter(id, in: ordered, descending: sort.descending) else { return nil }
                ordered = after
            case let .afterValue(_, id) where sort.field == .position:
                // In list order a value means nothing; the id stands for the album (as SQLite does).
                guard let after = listedAfter(id, in: ordered, descending: sort.descending) else { return nil }
                ordered = after
            case let .afterValue(value, id):
                ordered = ordered.filter { sort.orders(SortKey(value, id), before: key($0, sort)) }
            }
            return Array(ordered.prefix(limit))
        }

        /// The albums of `ordered` (list order, reversed when `descending`) after album `id`.
        private func listedAfter(_ id: AlbumID, in ordered: [Album], descending: Bool) -> [Album]? {
            guard let position = data.albums.firstIndex(where: { $0.id == id }) else { return nil }
            let after = Set(data.albums[(position + 1)...].map(\.id))
            let before = Set(data.albums[..<position].map(\.id))
            return ordered.filter { descending ? before.contains($0.id) : after.contains($0.id) }
        }

        func count(matching filter: AlbumFilter) throws -> Int { data.albums.filter(filter.matches).count }

        func count(matching filter: AlbumFilter, sort: AlbumSort, in range: SortRange, limit: Int) throws -> Int {
            min(max(0, limit), inRange(filter, sort, range).count)
        }

        func albums(matching filter: AlbumFilter, sort: AlbumSort, in range: SortRange, skipping: Int, limit: Int) throws -> [Album] {
            Array(inRange(filter, sort, range).dropFirst(max(0, skipping)).prefix(max(0, limit)))
        }

        /// The matching albums strictly inside `range`, in `sort` order (list order for `.position`,
        /// where a range means nothing).
        private func inRange(_ filter: AlbumFilter, _ sort: AlbumSort, _ range: SortRange) -> [Album] {
            var ordered = data.albums.filter(filter.matches)
            guard sort.field != .position else { return sort.descending ? ordered.reversed() : ordered }
            ordered.sort { orders(sort, $0, $1) }
            return ordered.filter { album in
                (range.after.map { sort.orders($0, before: key(album, sort)) } ?? true)
                    && (range.before.map { sort.orders(key(album, sort), before: $0) } ?? true)
            }
        }

        func forEachAlbum(_ body: (Album) throws -> Void) throws {
            for album in data.albums { try body(album) }
        }

        func undoDepth() throws -> Int { data.undo.count }
        func peekUndo() throws -> UndoCommand? { data.undo.last }
        func state(client: String) throws -> SavedState? { data.states[client] }
        func states() throws -> [SavedState] { data.states.values.sorted { $0.client < $1.client } }

        func insert(_ album: Album, at index: Int) throws {
            guard (0...data.albums.count).contains(index) else { throw IntegrityError(description: "insert at \(index)") }
            if let holder = context.library(of: album.id) {
                throw IntegrityError(description: "duplicate \(album.id) (held by library \(holder))")
            }
            data.albums.insert(album, at: index)
        }

        func update(_ album: Album) throws {
            guard let index = try index(of: album.id) else { throw IntegrityError(description: "update missing") }
            data.albums[index] = album
        }

        func delete(id: AlbumID) throws {
            guard let index = try index(of: id) else { throw IntegrityError(description: "delete missing") }
            data.albums.remove(at: index)
        }

        func move(id: AlbumID, to index: Int) throws {
            guard let from = try self.index(of: id), data.albums.indices.contains(index) else {
                throw IntegrityError(description: "bad move")
            }
            let album = data.albums.remove(at: from)
            data.albums.insert(album, at: index)
        }

        func deleteAllAlbums() throws { data.albums = [] }
        func deleteAllStates() throws { data.states = [:] }

        func bumpVersion() throws -> Int64 {
            data.version += 1
            return data.version
        }

        func pushUndo(_ command: UndoCommand, limit: Int) throws {
            data.undo.append(command)
            let limit = max(0, limit)
            if data.undo.count > limit { data.undo.removeFirst(data.undo.count - limit) }
        }

        func popUndo() throws -> UndoCommand? { data.undo.popLast() }
        func clearUndo() throws { data.undo = [] }
        func saveState(_ state: SavedState) throws { data.states[state.client] = state }

        func changes(after version: Int64, limit: Int) throws -> [LibraryChange] {
            Array(data.changes.lazy.filter { $0.version > version }.prefix(max(0, limit)))
        }

        func oldestRetainedChange() throws -> LibraryChange? { data.changes.first }

        func recordChange(_ change: LibraryChange) throws {
            if let last = data.changes.last, last.version >= change.version {
                throw IntegrityError(description: "change \(change.version) is not newer than \(last.version)")
            }
            data.changes.append(change)
        }

        func pruneChanges(throughVersion maxVersion: Int64, recordedBefore cutoff: Date, limit: Int) throws {
            let expired = data.changes.prefix(max(0, limit)).prefix { $0.version <= maxVersion && $0.recordedAt < cutoff }
            data.changes.removeFirst(expired.count)
        }
    }
}
