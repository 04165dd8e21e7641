import Essentials
import Foundation
import FuzzSupport
@_spi(Fuzzing) import Library

// Cursor decoding (`PageCursor.decode`, what `GET /albums?cursor=` does with the text).
// Cursors are sealed (`CursorSeal`: HMAC-SHA256 under the server's key); this target holds the
// key of its own seal (a cheap keyed tag: the seal is not what is fuzzed), so it can also seal
// any payload and reach the JSON and the checks behind the tag, as someone holding the key could.
// Byte 0: bit 0 = seal the rest as a payload, or take the rest as the cursor text; bits 1-3
// pick the query. Properties: it never traps; an accepted cursor belongs to the query, has no
// negative boundary or source outside its versions, and encodes to a text that decodes to the
// same cursor.

private let queries: [AlbumQuery] = [
    AlbumQuery(),
    AlbumQuery(sort: AlbumSort(.title)),
    AlbumQuery(sort: AlbumSort(.year, descending: true)),
    AlbumQuery(sort: AlbumSort(.createdAt)),
    AlbumQuery(sort: AlbumSort(.artist), filter: AlbumFilter(text: "blue")),
    AlbumQuery(filter: AlbumFilter(yearFrom: 1950, yearTo: 1970)),
    AlbumQuery(sort: AlbumSort(.position, descending: true)),
    AlbumQuery(sort: AlbumSort(.title, descending: true), filter: AlbumFilter(genre: "Jazz")),
]

private let seal = CursorSeal(tagLength: 16) { message in
    let key = Array("fuzz-key".utf8)
    let first = FNV1a.hash(key + message), second = FNV1a.hash(message + key)
    return withUnsafeBytes(of: (first, second)) { Array($0) }
}

/// A cursor text for `payload`: the payload, its tag under `seal`, base64url.
private func sealed(_ payload: [UInt8]) -> String {
    Data(payload + seal.fuzzingTag(payload)).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let mode = input.byte()
    let query = queries[Int(mode >> 1) % queries.count]
    let rest = input.rest()
    let text = mode & 1 == 1 ? sealed(rest) : String(decoding: rest, as: UTF8.self)
    guard let cursor = try? PageCursor.decode(text, for: query, seal: seal) else { return 0 }
    check(cursor.fingerprint == query.fingerprint, "accepted a cursor of another query")
    if let mark = cursor.mark {
        check(mark.boundary >= 0 && mark.versions.indices.contains(mark.source), "walk mark \(mark)")
        check(mark.exceptions.count <= WalkMark.maxExceptions, "\(mark.exceptions.count) exceptions")
    }
    let text2 = cursor.encoded(sealedWith: seal)
    let again = try? PageCursor.decode(text2, for: query, seal: seal)
    check(again == cursor, "\(cursor) encodes to \(text2), which decodes to \(String(describing: again))")
    return 0
}
