import Essentials
import Foundation

/// The opaque `cursor` of keyset paging: where the previous page ended, for which query.
///
/// What it holds:
/// - the query's fingerprint, so a cursor used with another sort or filter is refused;
/// - the sort value and id of the last album of the page (value-ordered sorts continue after
///   that key, which stays meaningful even if the album is deleted);
/// - for the library's own order, the ids of the page's last albums (newest last): the next
///   page starts after the last of them that still exists. Positions are not stable keys
///   (inserts renumber them), so a position sort continues after an album, not after a number;
///   if the page's last album was deleted the one before it stands in, and so on.
/// - for position order, the index the page ended at, used only if every anchor is gone.
///
/// On the wire: base64url of a small JSON document followed by its tag under the server's
/// `CursorSeal` (HMAC-SHA256 with a key kept in the database), so a cursor the server did not
/// issue, or one that was edited or cut short, is refused before anything in it is believed.
/// Even so, nothing in a cursor is trusted to be in range: a negative end index is refused and
/// the arithmetic on it cannot overflow.
public struct PageCursor: Sendable, Hashable {
    public var fingerprint: String
    public var lastValue: SortValue?
    public var anchors: [AlbumID]
    public var endIndex: Int?

    /// How many trailing ids a position cursor keeps.
    public static let anchorCount = 8

    public init(fingerprint: String, lastValue: SortValue?, anchors: [AlbumID], endIndex: Int?) {
        self.fingerprint = fingerprint
        self.lastValue = lastValue
        self.anchors = anchors
        self.endIndex = endIndex
    }

    private struct Wire: Codable {
        var f: String
        var t: String?
        var n: Int64?
        var a: [String]
        var e: Int?
    }

    /// The opaque text, sealed with `seal`.
    public func encoded(sealedWith seal: CursorSeal) -> String {
        var wire = Wire(f: fingerprint, t: nil, n: nil, a: anchors.map(\.rawValue), e: endIndex)
        switch lastValue {
        case let .text(text)?: wire.t = text
        case let .integer(number)?: wire.n = number
        case nil: break
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys  // one page, one cursor text
        var bytes = Array((try? encoder.encode(wire)) ?? Data())
        bytes += seal.tag(bytes)
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Reads a cursor sealed with `seal` and checks it belongs to `query`.
    /// - Throws: `.invalidCursor` saying what is wrong and what to do.
    public static func decode(_ text: String, for query: AlbumQuery, seal: CursorSeal) throws(LibraryError) -> PageCursor {
        guard text.utf8.count <= 4096 else {
            throw .invalidCursor("the cursor is not one this server issued; start from the first page (no cursor)")
        }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64), data.count > seal.tagLength else {
            throw .invalidCursor("the cursor is not one this server issued; start from the first page (no cursor)")
        }
        let bytes = Array(data)
        let payload = Array(bytes[..<(bytes.count - seal.tagLength)])
        guard seal.verify(payload, tag: Array(bytes[(bytes.count - seal.tagLength)...])),
            let wire = try? JSONDecoder().decode(Wire.self, from: Data(payload))
        else {
            throw .invalidCursor(
                "the cursor was changed, cut short or issued by another server; use the next link exactly as the server gave it")
        }
        guard wire.f == query.fingerprint else {
            throw .invalidCursor(
                "the cursor belongs to a different query (sort or filters changed); repeat the query without a cursor to start again")
        }
        let anchors = wire.a.compactMap { AlbumID($0) }
        guard anchors.count == wire.a.count else {
            throw .invalidCursor("the cursor was changed; use the next link exactly as the server gave it")
        }
        guard anchors.count <= anchorCount, (wire.e ?? 0) >= 0 else {
            throw .invalidCursor("the cursor was changed; use the next link exactly as the server gave it")
        }
        let value: SortValue? = wire.t.map { .text($0) } ?? wire.n.map { .integer($0) }
        let cursor = PageCursor(fingerprint: wire.f, lastValue: value, anchors: anchors, endIndex: wire.e)
        let positional = query.sort.field == .position
        guard positional ? !anchors.isEmpty : (value != nil && anchors.count == 1) else {
            throw .invalidCursor("the cursor does not fit this sort; repeat the query without a cursor to start again")
        }
        return cursor
    }
}

/// The value an album has in a sort's field (title/artist: text; year, createdAt: integer,
/// albums without a year as 0).
public enum SortValue: Sendable, Hashable {
    case text(String)
    case integer(Int64)

    /// `album`'s value for `field`; nil for the position sort, which has no value.
    public static func of(_ album: Album, for field: AlbumSort.Field) -> SortValue? {
        switch field {
        case .position: nil
        case .title: .text(album.title)
        case .artist: .text(album.artist)
        case .year: .integer(Int64(album.year ?? 0))
        case .createdAt: .integer(Timestamp.milliseconds(album.createdAt))
        }
    }
}
