import BlueLibraryAPI
import HTTPServer
import Library

/// `GET /albums` and `GET /libraries/{lib}/albums`: a page of a list query, through the
/// request model. Pages are cached per library (each has its own versions); `/albums` and
/// `/libraries/default/albums` are the same list and share entries and ETags.
///
/// The fast path runs on the event loop and touches no database: the ETag is the library
/// version plus the query, so `If-None-Match` is answered from the version alone, and a page
/// loaded at the current version is answered from memory. Anything else moves to the worker
/// pool, where identical concurrent requests share one store read.
///
/// `limit` follows the live `paging` settings: `defaultLimit` when absent, 400 above
/// `maxLimit`. They are part of the cache key (and so of the ETag), and the app erases the
/// cache when they change.
struct AlbumListRoute {
    typealias PageCache = RequestModelCache<PageKey, CachedPage>

    let libraries: LibraryResolver
    let pages: PageCache
    let settings: SettingsService
    /// Seals the cursors this route hands out and opens the ones it is given.
    let seal: CursorSeal
    /// Counts the bodies rendered (a HEAD renders none: see ``PageBody``).
    let renders: PageRenders
    /// The whole list as CSV, when the request asks for it (``CSVNegotiation``).
    let csv: CSVExport

    /// A page ready to send. Immutable and shared by reference: a cache hit (and a 304 from
    /// it) retains one object instead of copying four buffers' worth of references.
    final class CachedPage: Sendable {
        /// The body (unrendered while only HEADs asked for the page).
        let body: PageBody
        let etag: String
        /// The next page's query string (the path is the request's own, so both route forms
        /// share the page).
        let nextQuery: String?
        /// `/albums?` + `nextQuery`, made once: the bare route's link costs nothing per request.
        let nextBarePath: String?

        init(body: PageBody, etag: String, nextQuery: String?, nextBarePath: String?) {
            self.body = body
            self.etag = etag
            self.nextQuery = nextQuery
            self.nextBarePath = nextBarePath
        }
    }

    /// A list query as the model knows it: the raw query string under the paging limits in
    /// force. (No parsing on the hot path; equivalent queries spelled differently are separate
    /// models, which only costs a cache entry.)
    struct PageKey: Hashable, Sendable {
        var library: LibraryID
        var defaultLimit: Int
        var maxLimit: Int
        var query: String

        /// Equality compares the library too; the hash leaves it out (the same query in two
        /// libraries shares a bucket), so the hot path hashes no more than before libraries.
        func hash(into hasher: inout Hasher) {
            hasher.combine(defaultLimit)
            hasher.combine(maxLimit)
            hasher.combine(query)
        }

        /// `"v<version>-<hash>"`: changes with every commit, every query and every library
        /// (`default`'s tags are what they were before libraries).
        func etag(version: Int64) -> String {
            var text = library == .default ? "" : "\(library.rawValue)|"
            text += "\(defaultLimit),\(maxLimit)|"
            text += query
            return "\"v\(version)-\(ETag.hash(Array(text.utf8)))\""
        }
    }

    func register(into routes: inout RouterBuilder) {
        // A page read costs what the query asks (filter, deep offset, count): those run in the
        // read lane; a page bounded by its shape runs on the workers (``ListReadCost``).
        routes.addForEachLibrary(
            .get, "/albums", options: .expensiveRead(when: ListReadCost.isExpensiveAlbumList), fast: respondFromMemory, blocking: respond)
    }

    /// The fast path: a 304 from the version alone, or a page loaded at the current version;
    /// nil when the page must be read (`respond`), or the library's facade is not in memory.
    func respondFromMemory(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse? {
        // A request that may ask for CSV is decided on the worker (a byte scan here).
        if CSVNegotiation.mayAskForCSV(request) { return nil }
        // Only a version known without a read (never on a shared store: another instance may
        // have committed, so the blocking path reads it).
        guard let facade = try libraries.loaded(context), let version = facade.knownVersion() else { return nil }
        return try fromMemory(
            request, context, key: Self.key(request, facade, paging: settings.paging), version: version, queryIsValid: false, mayRender: false)
    }

    /// Any list request: from memory if it can be, else read (identical concurrent requests
    /// share one store read). The cursor is parsed here, on the worker: opening one (base64,
    /// HMAC, JSON) is not loop work. A HEAD reads the page like a GET (for its `Link` and its
    /// status) but leaves the body unrendered in the cache (see ``PageBody``).
    func respond(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let facade = try libraries.facade(context)
        if CSVNegotiation.mayAskForCSV(request), try CSVNegotiation.asksForCSV(request) {
            return try csvResponse(request, facade)
        }
        let (key, version, paging) = try lookup(request, facade)
        if let answered = try fromMemory(request, context, key: key, version: version, queryIsValid: false, mayRender: true) {
            return answered
        }
        // The query is checked before any precondition: a bad one is 400 even with
        // `If-None-Match: *` (RFC 9110 §13.2.1: conditions are evaluated for a request that
        // would otherwise succeed).
        let pageRequest = try Self.pageRequest(from: request, paging: paging, seal: seal)
        if let answered = try fromMemory(request, context, key: key, version: version, queryIsValid: true, mayRender: true) {
            return answered
        }
        let pretty = request.wantsPretty
        let isHead = request.method == .head
        let page = try pages.value(key, version: version) { [renders] in
            let page = try facade.page(pageRequest)
            let next = page.next?.encoded(sealedWith: seal)
            let nextQuery = next.map { Self.nextQuery(request, cursor: $0) }
            let render: PageBody.Render = { try renders.render { try AlbumRepresentation.listBytes(page, next: next, pretty: pretty) } }
            let body = isHead ? PageBody(deferred: render) : PageBody(bytes: try render())
            let cached = CachedPage(
                body: body, etag: key.etag(version: page.version), nextQuery: nextQuery, nextBarePath: nextQuery.map { "/albums?" + $0 })
            let bodyCost = body.bytes?.count ?? PageBody.estimatedCost(of: page)
            return .init(value: cached, version: page.version, cost: bodyCost + key.query.utf8.count + 256)
        }
        return try response(page, request: request, context: context)
    }

    /// The whole list as CSV (``CSVExport``), named after the library.
    private func csvResponse(_ request: HTTPRequest, _ facade: LibraryFacade) throws -> HTTPResponse {
        try CSVNegotiation.refusePaging(request)
        let query = try Self.pageRequest(from: request, seal: seal).query
        return try csv.response(request, name: facade.library.rawValue) { page in _ = try facade.walkList(query, page) }
    }

    /// The cache key under the paging limits in force (a page read under other limits is
    /// never served), and the library version.
    private func lookup(_ request: HTTPRequest, _ facade: LibraryFacade) throws -> (PageKey, Int64, LibrarySettings.Paging) {
        let paging = settings.paging
        let version = try facade.currentVersion()
        return (Self.key(request, facade, paging: paging), version, paging)
    }

    /// The request's cache key under `paging`.
    private static func key(_ request: HTTPRequest, _ facade: LibraryFacade, paging: LibrarySettings.Paging) -> PageKey {
        PageKey(library: facade.library, defaultLimit: paging.defaultLimit, maxLimit: paging.maxLimit, query: String(request.rawQuery ?? ""))
    }

    /// A 304 or the page from memory. A page cached for this key proves the query valid (it
    /// was read for these exact bytes under these limits), and so does one the cache still
    /// holds outdated (its age past `maxAge`, or an older version): a revalidation keeps its
    /// fast 304 after the page it once fetched aged out. Without either, a 304 from the version
    /// alone is answered only once the caller parsed the query (`queryIsValid`), so an invalid
    /// query is a 400 whatever `If-None-Match` says, and the fast path of a cached page parses
    /// nothing. A page only a HEAD has read has no body yet: a GET renders it where it may
    /// (`mayRender`: on the worker pool, not on the event loop).
    private func fromMemory(
        _ request: HTTPRequest, _ context: RequestContext, key: PageKey, version: Int64, queryIsValid: Bool, mayRender: Bool
    ) throws -> HTTPResponse? {
        let cached = pages.current(key, version: version)
        guard cached != nil || queryIsValid || (request.headers["If-None-Match"] != nil && pages.holdsValue(for: key)) else { return nil }
        // The condition is matched on the received bytes: a revalidation makes no String of it.
        let etag = cached?.etag
        if let matched = request.headers.withFirstValue("If-None-Match", { ETag.list($0, matches: etag ?? key.etag(version: version)) }),
            matched
        {
            return HTTPResponse(status: .notModified, headers: Self.pageHeaders(etag: etag ?? key.etag(version: version)))
        }
        guard let cached else { return nil }
        if !mayRender, request.method != .head, cached.body.bytes == nil { return nil }
        return try response(cached, request: request, context: context)
    }

    /// `ETag` and `Cache-Control` of a page or its 304, built with room for what follows
    /// (`Link`, `Content-Type`, the request id): one allocation, never regrown.
    static func pageHeaders(etag: String) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.reserveCapacity(6)
        headers.add("ETag", etag)
        headers.add("Cache-Control", "no-cache")
        return headers
    }

    func response(_ page: CachedPage, request: HTTPRequest, context: RequestContext) throws -> HTTPResponse {
        var headers = Self.pageHeaders(etag: page.etag)
        if let next = page.nextQuery, let bare = page.nextBarePath {
            let path = request.path == "/albums" ? bare : "\(request.path)?\(next)"
            headers.add("Link", "<\(RequestInput.absoluteURL(path, context))>; rel=\"next\"")
        }
        return try PageBody.response(page.body, request: request, headers: headers)
    }

    /// The next page's query: this request's query with `cursor` replaced (and `offset` dropped).
    static func nextQuery(_ request: HTTPRequest, cursor: String) -> String {
        var items = request.queryItems.filter { $0.name != "cursor" && $0.name != "offset" }
        items.append((name: "cursor", value: cursor))
        return items.map { "\(QueryEncoding.escape($0.name))=\(QueryEncoding.escape($0.value))" }.joined(separator: "&")
    }

    /// The years a `yearFrom` / `yearTo` may name: an album's.
    static let yearRange = AlbumFieldLimits.yearRange

    /// The filter's own rules (no U+0000, at most 500 characters, `yearFrom <= yearTo`) as
    /// query parameter problems: 400 `invalid-query-parameter` naming the first bad parameter,
    /// every problem in `errors` (the domain's 422 is for filters in a view's body).
    static func validatedQuery(_ filter: AlbumFilter) throws -> AlbumFilter {
        do throws(LibraryError) {
            return try filter.validated()
        } catch {
            guard case let .invalid(failure) = error else { throw error }
            let message = failure.errors.map(\.message).joined(separator: "; ") + "."
            throw HTTPError(.badRequest, detail: message, type: QueryParameters.problemType, title: "Invalid query parameter",
                            errors: failure.errors.map { .init(field: $0.field, message: $0.message + ".") })
        }
    }

    /// Reads `limit`, `cursor` or `offset`, `sort`, `q`, `artist`, `genre`, `yearFrom`, `yearTo`, `count`.
    static func pageRequest(from request: HTTPRequest, paging: LibrarySettings.Paging = .init(), seal: CursorSeal) throws -> PageRequest {
        let parameters = QueryParameters(request)
        let sort = try parameters.parsed("sort") { text in try AlbumSort.parse(text) }
        let filter = AlbumFilter(
            text: parameters.text("q").flatMap { $0.isEmpty ? nil : $0 },
            artist: parameters.text("artist"), genre: parameters.text("genre"),
            yearFrom: try parameters.integer("yearFrom", in: Self.yearRange),
            yearTo: try parameters.integer("yearTo", in: Self.yearRange))
        let validated = try Self.validatedQuery(filter)
        let query: AlbumQuery
        do throws(LibraryError) {
            query = try AlbumQuery.listing(sort: sort, filter: validated)
        } catch {
            throw QueryParameters.invalid("sort", error.message)
        }
        let maxLimit = min(max(paging.maxLimit, PageRequest.limitRange.lowerBound), PageRequest.limitRange.upperBound)
        let defaultLimit = min(max(paging.defaultLimit, PageRequest.limitRange.lowerBound), maxLimit)
        let limit = try parameters.integer("limit", in: PageRequest.limitRange.lowerBound...maxLimit) ?? defaultLimit
        let start: PageStart
        switch (parameters.text("cursor"), try parameters.integer("offset", in: 0...Int(Int32.max))) {
        case (.some, .some):
            throw QueryParameters.invalid("offset", "offset cannot be sent with cursor (whatever its value): send either cursor or offset, not both.")
        case let (cursor?, nil):
            start = .cursor(try PageCursor.decode(cursor, for: query, seal: seal))
        case let (nil, offset?):
            start = .offset(offset)
        case (nil, nil):
            start = .first
        }
        let count = try parameters.boolean("count") ?? false
        return PageRequest(query: query, start: start, limit: limit, includeTotal: count)
    }
}

/// Percent-encoding for query components we write into links.
enum QueryEncoding {
    static func escape(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return out
    }
}
