import AlbumStoreContract
import TestThreads
import Testing
@testable import Library

@Suite("Add at index (the tutorial's addAlbum:atIndex: rule)", .ownThreads)
struct InsertionIndexTests {
    @Test("resolve: nil appends, 0...count inserts, past the end appends", arguments: [
        (nil, 3, 3), (0, 3, 0), (2, 3, 2), (3, 3, 3), (4, 3, 3), (99, 0, 0),
    ] as [(Int?, Int, Int)])
    func resolve(requested: Int?, count: Int, expected: Int) throws {
        #expect(try InsertionIndex.resolve(requested: requested, count: count) == expected)
    }

    @Test("a negative index is rejected with a clear message")
    func negative() {
        #expect(throws: LibraryError.indexOutOfRange(index: -1, count: 3)) {
            try InsertionIndex.resolve(requested: -1, count: 3)
        }
        #expect(LibraryError.indexOutOfRange(index: -1, count: 3).message == "index -1 is negative; indexes start at 0")
    }
}
