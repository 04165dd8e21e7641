import Testing
@testable import Library

@Suite("Add at index (the tutorial's addAlbum:atIndex: rule)")
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

    @Test("add at index inserts there; index == count inserts at the end; > count appends")
    func addAtIndex() throws {
        // Given A, B, C
        let fixture = try Fixture()
        try fixture.add("A", "B", "C")
        // When adding at 1, at count (4), and far past the end
        let x = try fixture.facade.add(input("X"), at: 1)
        let y = try fixture.facade.add(input("Y"), at: 4)
        let z = try fixture.facade.add(input("Z"), at: 100)
        // Then each lands where the rule says and reports that index
        #expect(try fixture.titles() == ["A", "X", "B", "C", "Y", "Z"])
        #expect([x.index, y.index, z.index] == [1, 4, 5])
    }

    @Test("add with a negative index changes nothing")
    func addNegative() throws {
        let fixture = try Fixture()
        try fixture.add("A")
        #expect(throws: LibraryError.indexOutOfRange(index: -2, count: 1)) { try fixture.facade.add(input("X"), at: -2) }
        #expect(try fixture.titles() == ["A"])
        #expect(try fixture.facade.version() == 1)
    }
}
