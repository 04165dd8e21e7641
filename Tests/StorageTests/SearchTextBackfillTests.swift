import AlbumStoreContract
import BlueLibraryAPI
import Foundation
import HTTPTestSupport
import Library
import SQLite
import TestThreads
import Testing

@testable import Storage

/// A database from before `search_text` (v7) is searchable once a store has opened it: the
/// store fills the column for every existing row, in batches, and a second open has nothing
/// left to fill.
@Suite("SQLite: search text of albums from before v8", .ownThreads)
struct SearchTextBackfillTests {
    @Test func aStoreFillsTheSearchTextOfEveryOlderAlbum() throws {
        let path = try TemporaryDirectory.create() + "/old.sqlite"
        let count = SearchTextBackfill.batchSize * 2 + 7  // several batches and a partial one
        do {
            let connection = try Connection(path: path)
            try Schema.migrator(first: 7).migrate(connection)
            try connection.run("INSERT INTO buckets (library, ord, id, size) VALUES (1, 0, 1, ?1)", [.integer(Int64(count))])
            try connection.run("UPDATE libraries SET album_count = ?1, version = 1 WHERE id = 1", [.integer(Int64(count))])
            for n in 0..<count {
                let (title, artist) = n % 2 == 0 ? ("Homogenic \(n)", "Björk") : ("Takk \(n)", "Sigur Rós")
                try connection.run("""
                    INSERT INTO albums (library, album_id, bucket, pos, title, artist, genre, created_at, updated_at)
                    VALUES (1, ?1, 1, ?2, ?3, ?4, 'Pop', 1700000000000, 1700000000000)
                    """, [.text(AlbumStoreContract.id(UInt64(n + 1)).rawValue), .integer(Int64(n) * 1024),
                          .text(title), .text(artist)])
            }
        }
        let store = try SQLiteAlbumStore(path: path)
        try store.read(.default) { reader throws in
            #expect(try reader.count(matching: AlbumFilter(text: "bjork")) == (count + 1) / 2)
            #expect(try reader.count(matching: AlbumFilter(text: "sigur ros")) == count / 2)
            let startingWith10 = (0..<count).filter { $0 % 2 == 0 && String($0).hasPrefix("10") }.count
            #expect(try reader.count(matching: AlbumFilter(text: "homogenic 10")) == startingWith10)
        }
        let unfilled = try store.database.read { db in
            try db.value("SELECT count(*) FROM albums WHERE search_text IS NULL", as: Int.self)
        }
        #expect(unfilled == 0)
        // The search index holds every filled row (the counts above came through it).
        #expect(try store.checkConsistency(.default).albumCount == count)
        #expect(try store.database.write { db in try SearchTextBackfill.fillBatch(.searchText, db, after: 0).filled } == 0, "nothing left")
    }

    /// A database of v11 (before the genre sort) sorts by genre once a store has opened it: the
    /// store fills every album's genre key, and leaves its search text (and the search index)
    /// as they were.
    @Test func aStoreFillsTheGenreKeysOfAlbumsFromBeforeTheGenreSort() throws {
        let path = try TemporaryDirectory.create() + "/v11.sqlite"
        let genres = ["rock", "Ambient", "Électro", "jazz", "ROCK", "Blues"]
        do {
            let connection = try Connection(path: path)
            try Schema.migrator(first: 11).migrate(connection)
            try connection.run("INSERT INTO buckets (library, ord, id, size) VALUES (1, 0, 1, ?1)", [.integer(Int64(genres.count))])
            try connection.run("UPDATE libraries SET album_count = ?1, version = 1 WHERE id = 1", [.integer(Int64(genres.count))])
            for (n, genre) in genres.enumerated() {
                try connection.run("""
                    INSERT INTO albums (library, album_id, bucket, pos, title, artist, genre, created_at, updated_at,
                        search_text, title_sort, artist_sort)
                    VALUES (1, ?1, 1, ?2, ?3, 'Artist', ?4, 1700000000000, 1700000000000, ?5, ?6, 'artist')
                    """, [.text(AlbumStoreContract.id(UInt64(n + 1)).rawValue), .integer(Int64(n) * 1024),
                          .text("Title \(n)"), .text(genre),
                          // One more word than the album has: still there after the upgrade
                          // (the search text is not made again).
                          .text(SearchText.document(title: "Title \(n) untouched", artist: "Artist", genre: genre)), .text("title \(n)")])
            }
        }
        let store = try SQLiteAlbumStore(path: path)
        let sorted = try store.read(.default) { try $0.albums(matching: .all, sort: AlbumSort(.genre), from: .start, limit: 10) } ?? []
        #expect(sorted.map(\.genre) == ["Ambient", "Blues", "Électro", "jazz", "rock", "ROCK"], "folded as the title sort folds, ties by id")
        let unfilled = try store.database.read { db in
            try db.value("SELECT count(*) FROM albums WHERE genre_sort IS NULL OR search_text IS NULL", as: Int.self)
        }
        #expect(unfilled == 0)
        #expect(try store.checkConsistency(.default).albumCount == genres.count)
        #expect(try store.read(.default) { try $0.count(matching: AlbumFilter(text: "electro")) } == 1)
        #expect(try store.read(.default) { try $0.count(matching: AlbumFilter(text: "untouched")) } == genres.count)
        #expect(try store.database.write { db in try SearchTextBackfill.fillBatch(.genreKey, db, after: 0).filled } == 0, "nothing left")
    }
}
