import Foundation
import Library
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Conditional-request matching and request ids, without a server.
@Suite(.ownThreads) struct ETagListTests {
    @Test func ifNoneMatchComparesWeakly() {
        let tag = "\"v7-abc\""
        #expect(ETag.list(tag, matches: tag))
        #expect(ETag.list("W/\"v7-abc\"", matches: tag))
        #expect(ETag.list(tag, matches: "W/\"v7-abc\""))
        #expect(ETag.list("*", matches: tag))
        #expect(ETag.list(" \"other\" ,\t\"v7-abc\"\t", matches: tag))
        #expect(ETag.list("\"a\", , W/\"v7-abc\",", matches: tag))
        #expect(!ETag.list("\"v7-ab\"", matches: tag))
        #expect(!ETag.list("\"v7-abc\"x", matches: tag))
        #expect(!ETag.list("", matches: tag))
        #expect(!ETag.list(" , ", matches: tag))
        #expect(!ETag.list("v7-abc", matches: tag))
        #expect(!ETag.list("**", matches: tag))
    }

    @Test func ifMatchComparesStrongly() {
        let tag = "\"s1\""
        #expect(ETag.strongList(tag, matches: tag))
        #expect(ETag.strongList("\"s0\", \"s1\"", matches: tag))
        #expect(ETag.strongList("*", matches: tag))
        #expect(!ETag.strongList("W/\"s1\"", matches: tag))
        #expect(!ETag.strongList(tag, matches: "W/\"s1\""))
        #expect(!ETag.strongList("\"s2\"", matches: tag))
    }
}

@Suite(.ownThreads) struct RequestIDGeneratorTests {
    @Test func idsArePrefixAndBase32Counter() throws {
        let generator = RequestIDGenerator()
        let ids = (0..<2_000).map { _ in generator.next() }
        #expect(Set(ids).count == ids.count)
        let prefix = try #require(ids.first?.split(separator: "-").first)
        #expect(prefix.utf8.count == 8)
        for (offset, id) in ids.enumerated() {
            let parts = id.split(separator: "-")
            #expect(parts.count == 2 && parts[0] == prefix, "\(id)")
            #expect(parts[1] == String(offset + 1, radix: 32), "\(id)")
            #expect(id.utf8.count <= 15, "\(id) stays a small string")
            #expect(RequestIDMiddleware.isAcceptable(id))
        }
        #expect(ids[31].hasSuffix("-10") && ids[1_023].hasSuffix("-100"))
        #expect(Set((0..<20).map { _ in RequestIDGenerator().next().prefix(8) }).count > 1)  // prefixes differ
    }
}

/// One album response is encoded once: the ETag hashes the bytes that become the body.
@Suite(.ownThreads) struct AlbumRepresentationTests {
    static let item = IndexedAlbum(
        album: Album(
            id: AlbumID("01ARZ3NDEKTSV4RRFFQ69G5FAV")!, title: "Abbey Road", artist: "The Beatles", year: 1969,
            createdAt: Date(timeIntervalSince1970: 1_700_000_000), updatedAt: Date(timeIntervalSince1970: 1_700_000_000.5)),
        index: 3)

    @Test func theTagHashesTheEncodedFieldsThatBecomeTheBody() throws {
        let (body, etag) = try AlbumRepresentation.encoded(Self.item, pretty: false)
        #expect(body == (try AlbumRepresentation.bytes(Self.item, pretty: false)))
        // The body is the album's fields with the index joined in; the tag hashes the fields.
        let suffix = Array(#","index":3}"#.utf8) + [0x0A]
        #expect(Array(body.suffix(suffix.count)) == suffix)
        let fields = Array(body.dropLast(suffix.count)) + [UInt8(ascii: "}")]
        #expect(etag == "\"\(ETag.hash(fields)).3\"")
        #expect(etag == "\"\(AlbumRepresentation.contentHash(Self.item.album)).3\"")
        // The value clients hold is what it was before the single encoding (FNV-1a 64 of
        // the fields, computed apart from this code).
        #expect(etag == "\"8062bce4ac0c9a89.3\"")
    }

    @Test func prettyBodiesCarryTheSameTag() throws {
        let compact = try AlbumRepresentation.encoded(Self.item, pretty: false)
        let pretty = try AlbumRepresentation.encoded(Self.item, pretty: true)
        #expect(pretty.etag == compact.etag)
        #expect(pretty.body != compact.body)
        let decoded = try JSONSerialization.jsonObject(with: Data(pretty.body)) as? [String: Any]
        #expect(decoded?["index"] as? Int == 3)
        #expect(decoded?["title"] as? String == "Abbey Road")
    }
}
