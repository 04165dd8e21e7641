@testable import BlueLibraryAPI
import Foundation
import Library

/// A `Libraries` registry over fresh stores from `factory`, for the view and walk rules.
public struct ViewFixture {
    public let stores: StoreUnderTest
    public let clock = ManualDateClock()
    public let libraries: Libraries

    public static let jazz = LibraryID(rawValue: "jazz")
    public static let blues = LibraryID(rawValue: "blues")
    public static let outside = LibraryID(rawValue: "outside")

    public init(_ factory: AlbumStoreFactory, retention: ChangeRetention = .default) throws {
        stores = try factory()
        let clock = clock
        libraries = Libraries(
            store: stores.albums, clock: { clock.now }, ids: .random(clock: { clock.now }), changeRetention: retention)
    }

    /// Creates `ids` (besides `default`).
    public func create(_ ids: LibraryID...) throws {
        for id in ids { _ = try libraries.create(id: id) }
    }

    /// Adds `count` albums to `library`, titled `<prefix> <n>`, with genres and years cycling.
    @discardableResult
    public func fill(_ library: LibraryID, _ count: Int, prefix: String) throws -> [Album] {
        let facade = try libraries.facade(library)
        return try (0..<count).map { n in
            clock.advance(milliseconds: 1)
            let input = try AlbumInput(
                title: "\(prefix) \(n)", artist: ["Ann", "bob", "Cy"][n % 3], genre: ["Pop", "Rock", "Jazz"][n % 3],
                year: n % 4 == 0 ? nil : 1960 + (n * 7) % 40)
            return try facade.add(input).album
        }
    }

    /// A library's albums in order, read from the store.
    public func contents(_ library: LibraryID) throws -> [Album] {
        try stores.albums.read(library) { reader in
            var albums: [Album] = []
            try reader.forEachAlbum { albums.append($0) }
            return albums
        }
    }

    /// The view's albums in position order with their libraries (the brute-force reference).
    public func contents(of view: ViewDefinition) throws -> [(album: Album, library: LibraryID)] {
        try view.sources.flatMap { source in try contents(source).map { ($0, source) } }
    }
}
