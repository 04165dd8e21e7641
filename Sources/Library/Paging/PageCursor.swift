import BlueLibraryAPI
import Essentials
import Foundation

/// The opaque `cursor` of a page walk: where the previous page ended, for which query of
/// which list (a library, or a view and its revision).
///
/// Two kinds, by the query's sort:
/// - **Position order** (the sources' own orders concatenated): a ``WalkMark``, the exact-walk
///   state (the sources' versions when the page was read, the current source and the
///   boundary in it, and the albums on the "wrong" side of it). See `WalkReplay` for how the
///   next page replays the change feed from those versions.
/// - **Value sorts**: the sort value and id of the page's last album; the next page is the
///   keyset after that key in every source (ids are unique across libraries, so ties are
///   total). Stays meaningful if the album is deleted.
///
/// On the wire: base64url of a small JSON document followed by its tag under the server's
/// `CursorSeal` (HMAC-SHA256 with a key kept in the database), so a cursor the server did not
/// issue, or one that was edited or cut short, is refused before anything in it is believed.
/// Even so, nothing in a cursor is trusted to be in range: every number is checked. Cursors of
/// the format before exact walks (no `w`) are refused with `.invalidCursor` ("start again").
public struct PageCursor: Sendable, Hashable {
    /// The query's fingerprint (sort and filter).
    public var fingerprint: String
    /// The list walked: `library:<id>` or `view:<id>` (see ``scope(library:)``).
    public var scope: String
    /// The view's revision when the walk started (nil for a library).
    public var revision: Int64?
    /// The exact-walk state, for position order.
    public var mark: WalkMark?
    /// For value sorts: the last album's sort value and id.
    public var lastValue: SortValue?
    public var lastID: AlbumID?
    /// For the artist sort: the articles the last album's key was made with (a page after the
    /// library's keys were remade with others continues after that album's new key).
    public var lastArticles: SortArticles?

    /// The wire format written now; anything else is refused.
    static let format = 3

    public init(fingerprint: String, scope: String, revision: Int64? = nil, mark: WalkMark? = nil,
                lastValue: SortValue? = nil, lastID: AlbumID? = nil, lastArticles: SortArticles? = nil) {
        self.fingerprint = fingerprint
        self.scope = scope
        self.revision = revision
        self.mark = mark
        self.lastValue = lastValue
        self.lastID = lastID
        self.lastArticles = lastArticles
    }

    /// The scope text of a library's list.
    public static func scope(library: LibraryID) -> String { "library:\(library.rawValue)" }
    /// The scope text of a view's list.
    public static func scope(view: ViewID) -> String { "view:\(view.rawValue)" }

    private struct Wire: Codable {
        var w: Int?
        var f: String
        var s: String
        var r: Int64?
        var v: [Int64]?
        var k: Int?
        var b: Int?
        var x: [String]?
        var a: String?
        var t: String?
        var n: Int64?
        var i: String?
        var g: String?
    }

    private struct FormatProbe: Decodable {
        var w: Int?
    }

    /// The opaque text, sealed with `seal`.
    public func encoded(sealedWith seal: CursorSeal) -> String {
        var wire = Wire(w: Self.format, f: fingerprint, s: scope, r: revision)
        if let mark {
            wire.v = mark.versions
            wire.k = mark.source
            wire.b = mark.boundary
            wire.x = mark.exceptions.map { ($0.seen ? "+" : "-") + "\($0.source)." + $0.id.rawValue }
            wire.a = mark.anchor?.rawValue
        }
        switch lastValue {
        case let .text(text)?: wire.t = text
        case let .integer(number)?: wire.n = number
        case nil: break
        }
        wire.i = lastID?.rawValue
        wire.g = lastArticles?.description
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys  // one page, one cursor text
        var bytes = Array((try? encoder.encode(wire)) ?? Data())
        bytes += seal.tag(bytes)
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Reads a cursor sealed with `seal` and checks it belongs to `query` (the list it walks is
    /// checked by the page, which knows it).
    /// - Throws: `.invalidCursor` saying what is wrong and what to do.
    public static func decode(_ text: String, for query: AlbumQuery, seal: CursorSeal) throws(LibraryError) -> PageCursor {
        let foreign = "the cursor is not one this server issued; start from the first page (no cursor)"
        let edited = "the cursor was changed; use the next link exactly as the server gave it"
        guard text.utf8.count <= 8192 else { throw .invalidCursor(foreign) }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64), data.count > seal.tagLength else { throw .invalidCursor(foreign) }
        let bytes = Array(data)
        let payload = Array(bytes[..<(bytes.count - seal.tagLength)])
        guard seal.verify(payload, tag: Array(bytes[(bytes.count - seal.tagLength)...])) else {
            throw .invalidCursor(
                "the cursor was changed, cut short or issued by another server; use the next link exactly as the server gave it")
        }
        guard let probe = try? JSONDecoder().decode(FormatProbe.self, from: Data(payload)), probe.w == format,
            let wire = try? JSONDecoder().decode(Wire.self, from: Data(payload))
        else {
            throw .invalidCursor("the cursor comes from an earlier version of the server; start again without a cursor")
        }
        guard wire.f == query.fingerprint else {
            throw .invalidCursor(
                "the cursor belongs to a different query (sort or filters changed); repeat the query without a cursor to start again")
        }
        var cursor = PageCursor(fingerprint: wire.f, scope: wire.s, revision: wire.r)
        if query.sort.field == .position {
            guard let versions = wire.v, let source = wire.k, let boundary = wire.b,
                (1...WalkMark.maxSources).contains(versions.count), versions.allSatisfy({ $0 >= 0 }),
                (0..<versions.count).contains(source), boundary >= 0
            else { throw .invalidCursor(edited) }
            let texts = wire.x ?? []
            guard texts.count <= WalkMark.maxExceptions else { throw .invalidCursor(edited) }
            var exceptions: [WalkException] = []
            for text in texts {
                guard let exception = WalkException(wire: text), exception.source < versions.count else {
                    throw .invalidCursor(edited)
                }
                exceptions.append(exception)
            }
            var anchor: AlbumID?
            if let text = wire.a {
                guard let id = AlbumID(text) else { throw .invalidCursor(edited) }
                anchor = id
            }
            cursor.mark = WalkMark(versions: versions, source: source, boundary: boundary, exceptions: exceptions, anchor: anchor)
        } else {
            let value: SortValue? = wire.t.map { .text($0) } ?? wire.n.map { .integer($0) }
            guard let value, let id = wire.i.flatMap({ AlbumID($0) }) else {
                throw .invalidCursor("the cursor does not fit this sort; repeat the query without a cursor to start again")
            }
            cursor.lastValue = value
            cursor.lastID = id
            cursor.lastArticles = wire.g.map(SortArticles.init(stored:))
        }
        return cursor
    }
}

/// Where an exact walk in position order stands (see `WalkReplay`).
public struct WalkMark: Sendable, Hashable {
    /// Each source's version when the page was read, in the view's source order.
    public var versions: [Int64]
    /// The current source, in walk order (position order descending walks the sources last
    /// to first, each reversed).
    public var source: Int
    /// The boundary in the current source, in walk order: the albums before it (and all of
    /// the earlier sources) are behind the walk.
    public var boundary: Int
    /// Albums on the wrong side of the boundary: seen but ahead (skip when met), or not seen
    /// but behind (show next).
    public var exceptions: [WalkException]
    /// The album just before the boundary when the page was read (nil when the boundary is at
    /// the start of its source). It stays just before the boundary until it is itself deleted
    /// or moved (nothing lands between them: an insert at the boundary is ahead), so the next
    /// page can continue after it without looking the boundary up by index.
    public var anchor: AlbumID?

    /// At most this many sources (a view's limit).
    public static let maxSources = CatalogLimits.viewSources.upperBound
    /// At most this many exceptions; more and the walk expires (too much moved across it).
    public static let maxExceptions = 64

    public init(versions: [Int64], source: Int, boundary: Int, exceptions: [WalkException] = [], anchor: AlbumID? = nil) {
        self.versions = versions
        self.source = source
        self.boundary = boundary
        self.exceptions = exceptions
        self.anchor = anchor
    }
}

/// An album on the wrong side of a walk's boundary, with whether the walk has shown it (or
/// passed it) and the source (walk order) it is in.
public struct WalkException: Sendable, Hashable {
    public var id: AlbumID
    public var seen: Bool
    public var source: Int

    public init(id: AlbumID, seen: Bool, source: Int) {
        self.id = id
        self.seen = seen
        self.source = source
    }

    /// `+3.ID` (seen) or `-3.ID` (not seen).
    init?(wire text: String) {
        guard let sign = text.first, sign == "+" || sign == "-" else { return nil }
        let rest = text.dropFirst()
        guard let dot = rest.firstIndex(of: "."), let source = Int(rest[..<dot]), source >= 0,
            let id = AlbumID(String(rest[rest.index(after: dot)...]))
        else { return nil }
        self.init(id: id, seen: sign == "+", source: source)
    }
}

/// The value an album has in a sort's field (title/artist/genre: the text's sort key, `SortText`;
/// year, createdAt: integer, albums without a year as 0).
public enum SortValue: Sendable, Hashable {
    case text(String)
    case integer(Int64)

    /// `album`'s value for `field` (an artist's key without a leading article of `articles`;
    /// for relevance its rank in `search`, 0 without one); nil for the position sort, which
    /// has no value.
    public static func of(_ album: Album, for field: AlbumSort.Field, articles: SortArticles, search: SearchQuery? = nil) -> SortValue? {
        switch field {
        case .position: nil
        case .relevance: .integer(Int64(search?.rank(album) ?? 0))
        case .title: .text(SortText.key(album.title))
        case .artist: .text(SortText.artistKey(album.artist, ignoring: articles))
        case .genre: .text(SortText.key(album.genre))
        case .year: .integer(Int64(album.year ?? 0))
        case .createdAt: .integer(Timestamp.milliseconds(album.createdAt))
        }
    }
}
