import TestThreads
import Testing
@testable import Library

/// View index addressing (the composite data source's decompose/adduce).
@Suite(.ownThreads) struct CompositeIndexTests {
    @Test func decomposeMapsEveryIndexToItsSourceAndBack() {
        let layout = CompositeIndex(counts: [2, 0, 3, 0])
        #expect(layout.total == 5)
        #expect(layout.offsets == [0, 2, 2, 5, 5])
        let expected = [(0, 0), (0, 1), (2, 0), (2, 1), (2, 2)]
        for (index, (source, local)) in expected.enumerated() {
            let got = layout.decompose(index)
            #expect(got?.source == source && got?.local == local, "index \(index)")
            #expect(layout.adduce(source: source, local: local) == index)
        }
    }

    @Test func firstAndLastPositionsAndOutsideTheRange() {
        let layout = CompositeIndex(counts: [0, 4, 1])
        #expect(layout.decompose(0).map { [$0.source, $0.local] } == [1, 0], "the first album skips an empty first source")
        #expect(layout.decompose(4).map { [$0.source, $0.local] } == [2, 0], "the last album is the last source's first")
        #expect(layout.decompose(5) == nil)
        #expect(layout.decompose(-1) == nil)
        #expect(layout.decompose(Int.max) == nil)
    }

    @Test func emptySourcesHoldNoAlbums() {
        #expect(CompositeIndex(counts: [0, 0, 0]).decompose(0) == nil)
        #expect(CompositeIndex(counts: [0, 0, 0]).total == 0)
        #expect(CompositeIndex(counts: []).decompose(0) == nil)
        #expect(throws: LibraryError.self) { try CompositeIndex(counts: []).insertion(at: 0) }
    }

    @Test func insertsInsideASourceGoThereAndOnABoundaryAtTheEndOfTheEarlierSource() throws {
        let layout = CompositeIndex(counts: [2, 3])
        func place(_ index: Int) throws -> [Int] {
            let (source, local) = try layout.insertion(at: index)
            return [source, local]
        }
        #expect(try place(0) == [0, 0])
        #expect(try place(1) == [0, 1])
        #expect(try place(2) == [0, 2], "the boundary between the sources: the end of the first")
        #expect(try place(3) == [1, 1])
        #expect(try place(5) == [1, 3], "the end: the last source's end")
        #expect(try place(99) == [1, 3], "past the end: appended to the last source")
        #expect(throws: LibraryError.indexOutOfRange(index: -1, count: 5)) { try layout.insertion(at: -1) }
        // Whatever the place, the album ends up at the view index asked for.
        for index in 0...5 {
            let (source, local) = try layout.insertion(at: index)
            #expect(layout.adduce(source: source, local: local) == index)
        }
    }

    @Test func insertsIntoEmptySourcesTakeTheFirstSourceWhoseEndReachesTheIndex() throws {
        let layout = CompositeIndex(counts: [0, 0, 2])
        let (source, local) = try layout.insertion(at: 0)
        #expect(source == 0 && local == 0, "index 0: the first (empty) source")
        let end = try layout.insertion(at: 2)
        #expect(end.source == 2 && end.local == 2)
        let pastTheEnd = try CompositeIndex(counts: [0, 0]).insertion(at: 7)
        #expect(pastTheEnd.source == 1 && pastTheEnd.local == 0, "past the end of an empty view: the last source")
        let start = try CompositeIndex(counts: [0, 0]).insertion(at: 0)
        #expect(start.source == 0 && start.local == 0, "index 0 of an empty view: the first source")
    }
}
