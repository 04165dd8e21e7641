import Testing
import Library

struct InsertionIndexRules {
    let factory: AlbumStoreFactory

    func addAtIndex() throws {
        // Given A, B, C
        let fixture = try FacadeFixture(factory)
        try fixture.add("A", "B", "C")
        // When adding at 1, at count (4), and far past the end
        let x = try fixture.facade.add(input("X"), at: 1)
        let y = try fixture.facade.add(input("Y"), at: 4)
        let z = try fixture.facade.add(input("Z"), at: 100)
        // Then each lands where the rule says and reports that index
        #expect(try fixture.titles() == ["A", "X", "B", "C", "Y", "Z"])
        #expect([x.index, y.index, z.index] == [1, 4, 5])
    }

    func addNegative() throws {
        let fixture = try FacadeFixture(factory)
        try fixture.add("A")
        #expect(throws: LibraryError.indexOutOfRange(index: -2, count: 1)) { try fixture.facade.add(input("X"), at: -2) }
        #expect(try fixture.titles() == ["A"])
        #expect(try fixture.facade.version() == 1)
    }
}

extension FacadeRules {
    static let insertionIndexRules: [ContractCheck] = [
        ContractCheck("add at index inserts there; index == count inserts at the end; > count appends") { try InsertionIndexRules(factory: $0).addAtIndex() },
        ContractCheck("add with a negative index changes nothing") { try InsertionIndexRules(factory: $0).addNegative() },
    ]
}
