import BlueLibraryAPI
import Library
import Synchronization

/// A store that forwards everything to `base` and counts the album rows its readers hand out:
/// what a read decodes and holds (for tests of how much a page reads, whatever the engine).
public struct CountingAlbumStore: AlbumStore {
    public let base: any AlbumStore
    public let rows = RowCounter()

    public init(_ base: any AlbumStore) {
        self.base = base
    }

    public var isShared: Bool { base.isShared }

    public func read<T>(_ libraries: [LibraryID], _ body: ([any AlbumStoreReader]) throws -> T) throws -> T {
        try base.read(libraries) { readers in try body(readers.map { CountingReader(base: $0, rows: rows) }) }
    }

    public func write<T>(_ libraries: [LibraryID], _ body: ([any AlbumStoreWriter]) throws -> T) throws -> T {
        try base.write(libraries, body)
    }

    public func versions(of libraries: [LibraryID]) throws -> [Int64] { try base.versions(of: libraries) }
    public func libraries() throws -> [LibraryRecord] { try base.libraries() }
    public func createLibrary(_ id: LibraryID, name: String) throws -> LibraryRecord { try base.createLibrary(id, name: name) }
    public func renameLibrary(_ id: LibraryID, name: String) throws -> LibraryRecord { try base.renameLibrary(id, name: name) }
    public func deleteLibrary(_ id: LibraryID, onlyIfEmpty: Bool) throws { try base.deleteLibrary(id, onlyIfEmpty: onlyIfEmpty) }
    public func views() throws -> [ViewDefinition] { try base.views() }
    public func saveView(_ view: ViewDefinition) throws { try base.saveView(view) }
    public func saveView(_ view: ViewDefinition, expecting previousRevision: Int64?) throws -> Bool {
        try base.saveView(view, expecting: previousRevision)
    }
    public func deleteView(_ id: ViewID) throws -> Bool { try base.deleteView(id) }
}

/// Album rows handed out by a ``CountingAlbumStore``'s readers: in all, and the most one call
/// returned (a bound on what a reader of them holds at once, batch by batch).
public final class RowCounter: Sendable {
    private let state = Mutex((total: 0, largest: 0))
    public init() {}

    func add(_ rows: Int) {
        state.withLock {
            $0.total += rows
            $0.largest = max($0.largest, rows)
        }
    }

    public var total: Int { state.withLock { $0.total } }
    public var largest: Int { state.withLock { $0.largest } }
    public func reset() { state.withLock { $0 = (0, 0) } }
}

/// A reader that forwards to `base`, counting the albums it returns.
struct CountingReader: AlbumStoreReader {
    let base: any AlbumStoreReader
    let rows: RowCounter

    private func counted(_ albums: [Album]) -> [Album] {
        rows.add(albums.count)
        return albums
    }

    private func counted(_ album: Album?) -> Album? {
        rows.add(album == nil ? 0 : 1)
        return album
    }

    func version() throws -> Int64 { try base.version() }
    func count() throws -> Int { try base.count() }
    func sortArticles() throws -> SortArticles { try base.sortArticles() }
    func album(id: AlbumID) throws -> Album? { counted(try base.album(id: id)) }
    func library(of id: AlbumID) throws -> LibraryID? { try base.library(of: id) }
    func index(of id: AlbumID) throws -> Int? { try base.index(of: id) }
    func album(at index: Int) throws -> Album? { counted(try base.album(at: index)) }
    func albums(offset: Int, limit: Int) throws -> [Album] { counted(try base.albums(offset: offset, limit: limit)) }

    func forEachAlbum(_ body: (Album) throws -> Void) throws {
        try base.forEachAlbum { album in
            rows.add(1)
            try body(album)
        }
    }

    func albums(matching filter: AlbumFilter, sort: AlbumSort, from anchor: SortAnchor, limit: Int) throws -> [Album]? {
        try base.albums(matching: filter, sort: sort, from: anchor, limit: limit).map(counted)
    }

    func count(matching filter: AlbumFilter) throws -> Int { try base.count(matching: filter) }

    func count(matching filter: AlbumFilter, sort: AlbumSort, in range: SortRange, limit: Int) throws -> Int {
        try base.count(matching: filter, sort: sort, in: range, limit: limit)
    }

    func albums(matching filter: AlbumFilter, sort: AlbumSort, in range: SortRange, skipping: Int, limit: Int) throws -> [Album] {
        counted(try base.albums(matching: filter, sort: sort, in: range, skipping: skipping, limit: limit))
    }

    func undoDepth() throws -> Int { try base.undoDepth() }
    func peekUndo() throws -> UndoCommand? { try base.peekUndo() }
    func state(client: String) throws -> SavedState? { try base.state(client: client) }
    func states() throws -> [SavedState] { try base.states() }
    func forEachState(_ body: (SavedState) throws -> Void) throws { try base.forEachState(body) }
    func changes(after version: Int64, limit: Int) throws -> [LibraryChange] { try base.changes(after: version, limit: limit) }
    func oldestRetainedChange() throws -> LibraryChange? { try base.oldestRetainedChange() }
}
