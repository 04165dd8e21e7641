import Essentials
import Foundation
import TestThreads
import Testing
@testable import Library

/// The walk cursor's wire format.
@Suite(.ownThreads) struct PageCursorTests {
    /// A keyed tag for these tests (as PagingRules': FNV-1a of key and message, 16 bytes).
    let seal = CursorSeal(tagLength: 16) { message in
        let key = Array("test-key".utf8)
        let first = FNV1a.hash(key + message), second = FNV1a.hash(message + key)
        return withUnsafeBytes(of: (first, second)) { Array($0) }
    }

    func sealed(_ json: String) -> String {
        let payload = Array(json.utf8)
        return Data(payload + seal.tag(payload)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    @Test func aCursorOfTheFormatBeforeExactWalksIsRefusedWithStartAgain() {
        let fingerprint = AlbumQuery().fingerprint
        let old = sealed("{\"a\":[\"01ARZ3NDEKTSV4RRFFQ69G5FAV\"],\"e\":2,\"f\":\"\(fingerprint)\"}")
        #expect(throws: LibraryError.invalidCursor("the cursor comes from an earlier version of the server; start again without a cursor")) {
            try PageCursor.decode(old, for: AlbumQuery(), seal: seal)
        }
    }

    @Test func everyPartRoundTrips() throws {
        let id = try #require(AlbumID("01ARZ3NDEKTSV4RRFFQ69G5FAV"))
        let mark = WalkMark(versions: [3, 0, 12], source: 2, boundary: 7,
                            exceptions: [WalkException(id: id, seen: true, source: 1)], anchor: id)
        let position = PageCursor(fingerprint: AlbumQuery().fingerprint, scope: PageCursor.scope(view: ViewID(rawValue: "mix")),
                                  revision: 4, mark: mark)
        #expect(try PageCursor.decode(position.encoded(sealedWith: seal), for: AlbumQuery(), seal: seal) == position)
        let query = AlbumQuery(sort: AlbumSort(.year, descending: true))
        let value = PageCursor(fingerprint: query.fingerprint, scope: PageCursor.scope(library: .default), lastValue: .integer(1977), lastID: id)
        #expect(try PageCursor.decode(value.encoded(sealedWith: seal), for: query, seal: seal) == value)
        #expect(throws: LibraryError.self) { try PageCursor.decode(value.encoded(sealedWith: seal), for: AlbumQuery(), seal: seal) }
    }
}
