import Foundation
import HTTPTestSupport
import Library
import Storage
import TestThreads
import Testing

/// A migrated database read through the PostgreSQL album store, the way a server would read it,
/// agrees with the SQLite store it came from: the catalog, every library's albums, positions,
/// pages, undo, states, change feed and views.
@Suite("SQLite to PostgreSQL migration, read through the stores", .ownThreads)
struct MigrationReadBackTests {
    @Test("every read of the PostgreSQL store agrees with the SQLite store")
    func readsAgree() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("bluelibrary.sqlite")
        let sqlite = try SourceFixture.make(at: path)
        let pool = try TestDatabase().pool()
        _ = try DatabaseMigration.copy(fromSQLiteAt: path, to: pool, replacing: false)
        let postgres = try PostgresAlbumStore(pool: pool)

        #expect(try postgres.libraries() == sqlite.libraries())
        #expect(try postgres.views() == sqlite.views())
        let live = try sqlite.libraries().map(\.id)
        #expect(try postgres.versions(of: live) == sqlite.versions(of: live))
        for library in live {
            let expected = try Self.snapshot(sqlite, library)
            let actual = try Self.snapshot(postgres, library)
            #expect(actual == expected, "library \(library.rawValue)")
            #expect(!expected.albums.isEmpty && !expected.changes.isEmpty && expected.undoDepth > 0)
        }
        let gone = LibraryID(rawValue: "gone")
        #expect(throws: LibraryError.self) { try postgres.read(gone) { try $0.count() } }

        // The copy is a working store: a write continues each library's versions, order and undo.
        let jazz = LibraryID(rawValue: "jazz")
        let before = try Self.snapshot(postgres, jazz)
        let added = SourceFixture.album(5_000)
        try postgres.write(jazz) { writer in
            try writer.insert(added, at: 3)
            _ = try writer.bumpVersion()
        }
        var expectedAlbums = before.albums
        expectedAlbums.insert(added, at: 3)
        let after = try Self.snapshot(postgres, jazz)
        #expect(after.albums == expectedAlbums)
        #expect(after.version == before.version + 1)
        // Re-creating the deleted library continues its versions above the tombstone's.
        let recreated = try postgres.createLibrary(gone, name: "Back")
        let tombstoneVersion = try SourceFixture.libraries(of: sqlite).first { $0.name == "gone" }?.version ?? 0
        #expect(recreated.version > tombstoneVersion)
    }

    /// What one library reads as through an `AlbumStore`.
    struct Snapshot: Equatable {
        var version: Int64
        var albums: [Album]
        var indexes: [Int?]
        var undoDepth: Int
        var topUndo: UndoCommand?
        var states: [SavedState]
        var changes: [LibraryChange]
        var byTitle: [Album]?
        var filtered: Int
    }

    static func snapshot(_ store: any AlbumStore, _ library: LibraryID) throws -> Snapshot {
        try store.read(library) { reader in
            var albums: [Album] = []
            try reader.forEachAlbum { albums.append($0) }
            return Snapshot(
                version: try reader.version(), albums: albums, indexes: try albums.map { try reader.index(of: $0.id) },
                undoDepth: try reader.undoDepth(), topUndo: try reader.peekUndo(), states: try reader.states(),
                changes: try reader.changes(after: 0, limit: 1_000),
                byTitle: try reader.albums(
                    matching: .all, sort: AlbumSort(.title), from: .start, limit: 1_000),
                filtered: try reader.count(matching: AlbumFilter(text: "ALBUM 1", artist: "ARTIST")))
        }
    }
}
