import AlbumStoreContract
import Essentials
import Foundation
import HTTPTestSupport
import Library
import Storage
import Testing

enum Fixtures {
    private static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// A valid album id whose text encodes `number` (ids sort like the numbers).
    static func id(_ number: UInt64) -> AlbumID { AlbumStoreContract.id(number) }

    /// A valid album id made of random bits.
    static func randomID(using generator: inout some RandomNumberGenerator) -> AlbumID {
        var symbols = [alphabet[Int.random(in: 0..<8, using: &generator)]]
        for _ in 1..<AlbumID.length {
            symbols.append(alphabet[Int.random(in: 0..<32, using: &generator)])
        }
        return AlbumID(String(decoding: symbols, as: UTF8.self))!
    }

    static func album(_ number: UInt64, title: String? = nil) -> Album {
        let millis = 1_700_000_000_000 + Int64(number) * 1_001
        return Album(
            id: id(number), title: title ?? "Album \(number)", artist: "Artist \(number % 97)",
            genre: number % 3 == 0 ? "Rock" : Album.defaultGenre, year: number % 5 == 0 ? nil : 1950 + Int(number % 70),
            coverUrl: number % 4 == 0 ? nil : "https://covers.example.com/\(number).png",
            createdAt: Timestamp.date(milliseconds: millis), updatedAt: Timestamp.date(milliseconds: millis + 7))
    }

    static func store(
        _ directory: TemporaryDirectory, bucketSize: Int = 512,
        spacing: SQLiteAlbumStore.KeySpacing = SQLiteAlbumStore.KeySpacing(),
        durability: SQLiteAlbumStore.Configuration.Durability = .normal,
        name: String = "library.sqlite", searchIndexLimits: (sort: Int, filter: Int) = SQLiteAlbumStore.Configuration().searchIndexLimits
    ) throws -> SQLiteAlbumStore {
        try SQLiteAlbumStore(
            path: directory.file(name),
            configuration: SQLiteAlbumStore.Configuration(
                durability: durability, readerCount: 2, bucketSize: bucketSize, writerCacheKiB: 0, keySpacing: spacing,
                searchIndexLimits: searchIndexLimits))
    }

    /// Every album of `library` in order, read through `forEachAlbum`.
    static func allAlbums(_ store: SQLiteAlbumStore, _ library: LibraryID = .default) throws -> [Album] {
        try store.read(library) { reader throws in
            var albums: [Album] = []
            try reader.forEachAlbum { albums.append($0) }
            return albums
        }
    }
}

/// An error only a test throws, to check it comes back unchanged.
struct MarkerError: Error, Equatable {
    let token: Int
}
