import Essentials
import HTTPServer
import Library

/// How albums and pages look on the wire, encoded by hand on the hot paths (no JSONEncoder
/// per request). `?pretty` is the same bytes re-indented (Essentials' `JSONIndenter`), so the
/// two forms come from one encoder and cannot disagree.
enum AlbumRepresentation {
    /// An album with its index: the album's fields plus `"index"`.
    static func bytes(_ item: IndexedAlbum, pretty: Bool) throws -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(320)
        appendCompact(item, to: &bytes)
        if pretty { return JSONIndenter.indent(bytes) }
        bytes.append(0x0A)
        return bytes
    }

    static func appendCompact(_ item: IndexedAlbum, to bytes: inout [UInt8]) {
        item.album.appendJSON(to: &bytes)
        appendIndex(item.index, to: &bytes, newline: false)
    }

    /// Turns an album's compact JSON at the end of `bytes` into the indexed form: the index
    /// joins the album's fields.
    private static func appendIndex(_ index: Int, to bytes: inout [UInt8], newline: Bool = true) {
        bytes.removeLast()  // the closing brace
        bytes.append(contentsOf: ",\"index\":".utf8)
        bytes.append(contentsOf: String(index).utf8)
        bytes.append(UInt8(ascii: "}"))
        if newline { bytes.append(0x0A) }
    }

    /// The album's ETag: a hash of its fields, then its index (`"<fields>.<index>"`). The
    /// index is part of the representation, so a move changes the tag; `If-Match` compares
    /// the fields part only, so a concurrent move does not fail an edit of the fields.
    /// `fields` is the album's compact JSON (`Album.appendJSON`), already encoded.
    private static func etag(fields: [UInt8], index: Int) -> String {
        "\"\(ETag.hash(fields)).\(index)\""
    }

    static func contentHash(_ album: Album) -> String {
        var bytes: [UInt8] = []
        album.appendJSON(to: &bytes)
        return ETag.hash(bytes)
    }

    /// One album's body and ETag from a single encoding of its fields: the tag hashes those
    /// bytes, which then become the body (`?pretty`: re-indented; the tag is the compact one's,
    /// so a representation has one tag however it is printed).
    ///
    /// With `library` (an album that just moved between libraries) the body also says which
    /// library holds it now: `"library": "jazz"` after `"index"`.
    static func encoded(_ item: IndexedAlbum, library: LibraryID? = nil, pretty: Bool) throws -> (body: [UInt8], etag: String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(320)
        item.album.appendJSON(to: &bytes)
        let etag = etag(fields: bytes, index: item.index)
        appendIndex(item.index, to: &bytes, newline: false)
        if let library { appendLibrary(library, to: &bytes) }
        if pretty { return (JSONIndenter.indent(bytes), etag) }
        bytes.append(0x0A)
        return (bytes, etag)
    }

    /// The `If-Match` test for the facade, evaluated inside the write transaction.
    static func ifMatch(_ request: HTTPRequest) -> ((Album) -> Bool)? {
        request.headers["If-Match"].map(ifMatch(header:))
    }

    /// The test of an `If-Match` value (one or more ETags, or `*`).
    static func ifMatch(header: String) -> (Album) -> Bool {
        let tags = header.split(separator: ",").map { $0.trimmingASCIIWhitespace() }
        return { album in
            let hash = contentHash(album)
            return tags.contains { tag in
                if tag == "*" { return true }
                guard !tag.hasPrefix("W/") else { return false }  // If-Match uses strong comparison
                let opaque = tag.trimmingCharacters(in: ["\""])
                return opaque.split(separator: ".").first.map(String.init) == hash
            }
        }
    }

    /// A response for one album, with its ETag, answering 304 when `If-None-Match` matches.
    /// `library`: see ``encoded(_:library:pretty:)``.
    static func response(
        _ item: IndexedAlbum, library: LibraryID? = nil, request: HTTPRequest, status: HTTPStatus = .ok,
        headers: HTTPHeaders = HTTPHeaders()
    ) throws -> HTTPResponse {
        var headers = headers
        let (body, etag) = try encoded(item, library: library, pretty: request.wantsPretty)
        headers.set("ETag", etag)
        headers.set("Cache-Control", "no-cache")
        let response = HTTPResponse(status: status, contentType: "application/json", bytes: body, headers: headers)
        // Only reads revalidate: a PATCH or move must never answer 304 after committing.
        let isRead = request.method == .get || request.method == .head
        return status == .ok && isRead ? try ConditionalGET.respond(to: request, with: response) : response
    }

    /// A page of a list: `{"items": [...], "next": cursor-or-null, "version": n}` and
    /// `"total"` when counted. Items carry `index` only when the list shows indexes. `next` is
    /// the page's next cursor, already sealed. With `sources` (a view page: the view's
    /// libraries, in the order of `page.versions`) the page also says `"versions"`, each
    /// source's version: `{"default": 12, "jazz": 3}`.
    static func listBytes(_ page: AlbumListPage, next: String?, pretty: Bool, sources: [LibraryID]? = nil) throws -> [UInt8] {
        var json = JSONWriter(capacity: 256 * max(1, page.items.count))
        json.beginObject()
        json.key("items")
        json.beginArray()
        var album: [UInt8] = []
        for item in page.items {
            album.removeAll(keepingCapacity: true)
            appendCompact(item, to: &album)
            json.raw(album)
        }
        json.endArray()
        json.key("next")
        if let next { json.string(next) } else { json.null() }
        if let total = page.total {
            json.key("total"); json.number(total)
        }
        json.key("version"); json.number(page.version)
        if let sources {
            // A view page: the version of each source the page was read at.
            json.key("versions")
            json.beginObject()
            for (source, version) in zip(sources, page.versions) {
                json.key(source.rawValue); json.number(version)
            }
            json.endObject()
        }
        json.endObject()
        if pretty { return JSONIndenter.indent(json.bytes) }
        json.newline()
        return json.bytes
    }

    /// A list item: the album's fields, `"index"` when the list shows indexes and
    /// `"library"` when it spans several libraries (view pages).
    static func appendCompact(_ item: ListedAlbum, to bytes: inout [UInt8]) {
        if let index = item.index {
            appendCompact(IndexedAlbum(album: item.album, index: index), to: &bytes)
        } else {
            item.album.appendJSON(to: &bytes)
        }
        if let library = item.library { appendLibrary(library, to: &bytes) }
    }

    /// Adds `"library": id` to the object at the end of `bytes`.
    static func appendLibrary(_ library: LibraryID, to bytes: inout [UInt8]) {
        bytes.removeLast()  // the closing brace
        bytes.append(contentsOf: ",\"library\":".utf8)
        JSONString.append(library.rawValue, to: &bytes)
        bytes.append(UInt8(ascii: "}"))
    }
}
