import Foundation
import FuzzSupport
import Library

// Cursor decoding (`PageCursor.decode`, what `GET /albums?cursor=` does with the text).
// Today's cursors carry an FNV-1a checksum over a salt that is in the source, so a client can
// forge one; this target forges them too, to reach the JSON and the checks behind the checksum.
// When cursors become HMAC-SHA256 under a key, the forging half signs with a fixed test key
// through the seam that takes the key.
// Byte 0: bit 0 = forge (the rest is the payload, signed) or not (the rest is the cursor text);
// bits 1-3 pick the query. Properties: it never traps; an accepted cursor belongs to the query
// and encodes to a text that decodes to the same cursor.

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

/// A cursor text for `payload` with today's checksum (FNV-1a 64 over the salt and payload).
private func forge(_ payload: [UInt8]) -> String {
    var bytes = payload
    let sum = FNV1a.hash(Array("bluelibrary.cursor.v1".utf8) + payload)
    withUnsafeBytes(of: sum.bigEndian) { bytes.append(contentsOf: $0) }
    return Data(bytes).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let mode = input.byte()
    let query = queries[Int(mode >> 1) % queries.count]
    let rest = input.rest()
    let text = mode & 1 == 1 ? forge(rest) : String(decoding: rest, as: UTF8.self)
    guard let cursor = try? PageCursor.decode(text, for: query) else { return 0 }
    check(cursor.fingerprint == query.fingerprint, "accepted a cursor of another query")
    let again = try? PageCursor.decode(cursor.encoded, for: query)
    check(again == cursor, "\(cursor) encodes to \(cursor.encoded), which decodes to \(String(describing: again))")
    return 0
}
