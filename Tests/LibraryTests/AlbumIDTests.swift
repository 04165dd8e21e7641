import Foundation
import Synchronization
import AlbumStoreContract
import TestThreads
import Testing
@testable import Library

@Suite("Album ids (ULID)", .ownThreads)
struct AlbumIDTests {
    @Test("ids are 26 Crockford base32 symbols carrying the millisecond time")
    func format() {
        // Given a generator at a known time
        let clock = ManualDateClock(Date(timeIntervalSince1970: 1_700_000_000.123))
        let id = AlbumIDGenerator.random(clock: { clock.now }).next()
        // Then the id has the ULID shape and decodes to that time
        #expect(id.rawValue.count == 26)
        #expect(id.rawValue.allSatisfy { "0123456789ABCDEFGHJKMNPQRSTVWXYZ".contains($0) })
        #expect(id.timestampMilliseconds == 1_700_000_000_123)
        #expect(AlbumID(id.rawValue) == id)
    }

    @Test("ids are unique and sort in creation order, even within one millisecond")
    func uniqueAndOrdered() {
        // Given a clock that stands still for 1000 ids, then moves
        let clock = ManualDateClock()
        let generator = AlbumIDGenerator.random(clock: { clock.now })
        var ids = (0..<1000).map { _ in generator.next() }
        clock.advance(milliseconds: 1)
        ids.append(generator.next())
        // Then all differ and each is greater than the one before
        #expect(Set(ids).count == ids.count)
        #expect(ids == ids.sorted())
        #expect(zip(ids, ids.dropFirst()).allSatisfy { $0.rawValue < $1.rawValue })
    }

    @Test("parsing accepts lower case as the canonical id and rejects malformed text", arguments: [
        ("01hzy8q6v9t3x2k7m4n5p6r7s8", "01HZY8Q6V9T3X2K7M4N5P6R7S8"),
        ("01HZY8Q6V9T3X2K7M4N5P6R7S", nil), // 25 symbols
        ("01HZY8Q6V9T3X2K7M4N5P6R7S8X", nil), // 27 symbols
        ("01HZY8Q6V9T3X2K7M4N5P6R7SU", nil), // U is not in the alphabet
        ("81HZY8Q6V9T3X2K7M4N5P6R7S8", nil), // more than 128 bits
        ("01HZY8Q6V9T3X2K7M4N5P6R7/8", nil),
    ] as [(String, String?)])
    func parsing(text: String, canonical: String?) {
        #expect(AlbumID(text)?.rawValue == canonical)
    }

    @Test("parse throws a message that shows a valid id")
    func parseError() {
        #expect(throws: LibraryError.invalidAlbumID("nope")) { try AlbumID.parse("nope") }
        #expect(LibraryError.invalidAlbumID("nope").message.contains("26 characters"))
    }

    @Test("an injected generator decides the ids the facade assigns")
    func injectedGenerator() throws {
        // Given a generator that hands out a fixed id
        let fixed = AlbumID("01HZY8Q6V9T3X2K7M4N5P6R7S8")!
        let facade = LibraryFacade(store: InMemoryAlbumStore(), clock: { Date() }, ids: AlbumIDGenerator { fixed })
        // When an album is added
        let added = try facade.add(input("T"))
        // Then it has that id
        #expect(added.album.id == fixed)
    }
}
