import AlbumStoreContract
import Foundation
import HTTPTestSupport
import TestThreads
import Testing
@testable import BlueLibraryAPI
@testable import Library

/// The archive parser's id bookkeeping: ids in ascending order are kept in an array (no
/// hashing), the first id out of order moves them into a dictionary. Either way a duplicate is
/// found and named with the index it first appeared at, and a state's `albumID` must name an
/// album of the document.
@Suite("Archive album ids", .ownThreads)
struct ArchiveAlbumIDTests {
    /// Distinct valid ids that sort as `0 < 1 < 2 < ...` (the last symbols count up).
    static func id(_ n: Int) -> String {
        let symbols = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
        return "01HZY8Q6V9T3X2K7M4N5P6R7" + String(symbols[n / 32]) + String(symbols[n % 32])
    }

    static func album(_ n: Int) -> String {
        #"{"id":""# + id(n) + #"","title":"T\#(n)","artist":"A","createdAt":"2024-01-01T00:00:00Z","updatedAt":"2024-01-01T00:00:00Z"}"#
    }

    /// An archive of the albums with these id numbers, in this order, and `states`.
    static func archive(_ numbers: [Int], states: String = "") -> [UInt8] {
        bytes(#"{"format":"bluelibrary.archive","formatVersion":1,"albums":["# + numbers.map(album).joined(separator: ",")
              + #"],"states":["# + states + "]}")
    }

    static func problems(_ json: [UInt8]) -> [ArchiveProblem] {
        guard case .archiveInvalid(let problems)? = libraryError({ _ = try ArchiveDocument.parse(json: json) }) else {
            Issue.record("expected archiveInvalid")
            return []
        }
        return problems
    }

    @Test("ids in ascending order, in any order, and descending are all accepted, in document order",
          arguments: [[0, 1, 2, 3, 4, 5], [0, 1, 5, 2, 4, 3], [5, 4, 3, 2, 1, 0], [3, 4, 5, 0, 1, 2]])
    func distinctIDs(order: [Int]) throws {
        let document = try ArchiveDocument.parse(json: Self.archive(order))
        #expect(document.albums.map(\.id.rawValue) == order.map(Self.id))
    }

    @Test("a duplicate is named with its first index, whether the ids before it were ascending or not",
          arguments: [
              ([0, 1, 2, 1], 3, 1),          // still ascending when the duplicate comes
              ([0, 1, 2, 2], 3, 2),          // a duplicate of the last id
              ([2, 0, 1, 0], 3, 1),          // out of order first, then the duplicate
              ([0, 1, 3, 2, 3, 0], 4, 2),    // several, the first one is reported first
          ] as [([Int], Int, Int)])
    func duplicates(order: [Int], at index: Int, first: Int) throws {
        let problems = Self.problems(Self.archive(order))
        try #require(!problems.isEmpty)
        #expect(problems[0].path == "albums[\(index)].id")
        #expect(problems[0].message.contains("duplicates albums[\(first)].id (\(Self.id(order[index])))"))
    }

    @Test("a state's albumID is found among ascending and among unordered ids; an unknown one is refused",
          arguments: [[0, 1, 2, 3], [3, 1, 0, 2]])
    func stateAlbumIDs(order: [Int]) throws {
        for n in order {
            let state = #"{"client":"phone","currentAlbumIndex":0,"albumID":""# + Self.id(n) + #""}"#
            let document = try ArchiveDocument.parse(json: Self.archive(order, states: state))
            #expect(document.states.first?.albumID?.rawValue == Self.id(n))
        }
        for missing in [4, 40] {
            let state = #"{"client":"phone","currentAlbumIndex":0,"albumID":""# + Self.id(missing) + #""}"#
            let problems = Self.problems(Self.archive(order, states: state))
            #expect(problems.map(\.path) == ["states[0].albumID"])
        }
    }

    @Test("the rules' NUL check finds a NUL anywhere in a text, and only a NUL")
    func nulCheck() {
        #expect(AlbumFieldRules.containsNUL("a\u{0}b"))
        #expect(AlbumFieldRules.containsNUL("\u{0}"))
        #expect(AlbumFieldRules.containsNUL(String(repeating: "é", count: 100) + "\u{0}"))
        #expect(!AlbumFieldRules.containsNUL(""))
        #expect(!AlbumFieldRules.containsNUL("日本語 ☃ 😀"))
        // A bridged or sliced string goes through the same contiguous bytes.
        #expect(AlbumFieldRules.containsNUL(String(Substring("xx\u{0}yy".dropFirst()))))
    }
}
