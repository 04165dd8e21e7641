import Essentials
import Foundation
import Library

/// An `AlbumStore` over plain arrays, for tests only (never shipped in Sources).
///
/// Transactions work on a copy of the library's data and commit by swapping it in, so a throw
/// from the body (or an injected commit failure) leaves nothing behind — the same contract the
/// SQLite store keeps.
// @unchecked because every access to `libraries` and the counters happens under `lock`.
public final class InMemoryAlbumStore: AlbumStore, @unchecked Sendable {
    public struct LibraryData {
        public var albums: [Album] = []
        public var version: Int64 = 0
        public var undo: [UndoCommand] = []
        public var states: [String: SavedState] = [:]
        /// The change feed, oldest first.
        public var changes: [LibraryChange] = []
    }

    /// Thrown by `write` when `failNextCommit` is set: the body ran but nothing is committed.
    public struct CommitFailure: Error, Equatable {}

    private let lock = NSLock()
    private var libraryData: [LibraryID: LibraryData] = [:]
    private var _writeCount = 0
    private var _failNextCommit = false

    /// Committed write transactions so far.
    public var writeCount: Int { lock.withLock { _writeCount } }
    private var _readCount = 0
    /// Read transactions so far.
    public var readCount: Int { lock.withLock { _readCount } }

    /// Makes the next `write` run its body and then fail instead of committing.
    public func failNextCommit() { lock.withLock { _failNextCommit = true } }

    /// A committed snapshot of one library, for assertions.
    public func data(_ library: LibraryID = .default) -> LibraryData {
        lock.withLock { libraryData[library] ?? LibraryData() }
    }

    public init() {}

    public func read<T>(_ library: LibraryID, _ body: (any AlbumStoreReader) throws -> T) throws -> T {
        try lock.withLock {
            _readCount += 1
            return try body(Transaction(libraryData[library] ?? LibraryData()))
        }
    }

    public func write<T>(_ library: LibraryID, _ body: (any AlbumStoreWriter) throws -> T) throws -> T {
        try lock.withLock {
            let transaction = Transaction(libraryData[library] ?? LibraryData())
            let result = try body(transaction)
            if _failNextCommit {
                _failNextCommit = false
                throw CommitFailure()
            }
            libraryData[library] = transaction.data
            _writeCount += 1
            return result
        }
    }

    /// One transaction's private copy of the data.
    final class Transaction: AlbumStoreWriter {
        struct IntegrityError: Error, CustomStringConvertible {
            var description: String
        }

        var data: LibraryData

        init(_ data: LibraryData) { self.data = data }

        func version() throws -> Int64 { data.version }
        func count() throws -> Int { data.albums.count }
        func album(id: AlbumID) throws -> Album? { data.albums.first { $0.id == id } }
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
                ordered.sort { sort.orders($0, before: $1) }
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
                ordered = ordered.filter { sort.orders(anchor, before: $0) }
            case let .afterAlbum(id):
                guard let after = listedAfter(id, in: ordered, descending: sort.descending) else { return nil }
                ordered = after
            case let .afterValue(_, id) where sort.field == .position:
                // In list order a value means nothing; the id stands for the album (as SQLite does).
                guard let after = listedAfter(id, in: ordered, descending: sort.descending) else { return nil }
                ordered = after
            case let .afterValue(value, id):
                let key = Album(id: id, title: "", artist: "", genre: "", year: nil, coverUrl: nil,
                                createdAt: Date(timeIntervalSince1970: 0), updatedAt: Date(timeIntervalSince1970: 0))
                ordered = ordered.filter { album in
                    // Compare against a stand-in album carrying the anchor's sort value.
                    var anchorAlbum = key
                    switch (sort.field, value) {
                    case let (.title, .text(text)): anchorAlbum.title = text
                    case let (.artist, .text(text)): anchorAlbum.artist = text
                    case let (.year, .integer(year)): anchorAlbum.year = year == 0 ? nil : Int(year)
                    case let (.createdAt, .integer(ms)): anchorAlbum.createdAt = Timestamp.date(milliseconds: ms)
                    default: break
                    }
                    return sort.orders(anchorAlbum, before: album)
                }
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

        func forEachAlbum(_ body: (Album) throws -> Void) throws {
            for album in data.albums { try body(album) }
        }

        func undoDepth() throws -> Int { data.undo.count }
        func peekUndo() throws -> UndoCommand? { data.undo.last }
        func state(client: String) throws -> SavedState? { data.states[client] }
        func states() throws -> [SavedState] { data.states.values.sorted { $0.client < $1.client } }

        func insert(_ album: Album, at index: Int) throws {
            guard (0...data.albums.count).contains(index) else { throw IntegrityError(description: "insert at \(index)") }
            guard try self.album(id: album.id) == nil else { throw IntegrityError(description: "duplicate \(album.id)") }
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
