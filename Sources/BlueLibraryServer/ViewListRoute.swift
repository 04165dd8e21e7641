import HTTPServer
import Library

/// `GET /views/{view}/albums`: a page of a composite view, through the request model, with
/// the query parameters, cursors, `count`, `Link` and ETag rules of `GET /albums`
/// (``AlbumListRoute`` parses the query and shapes the response; only the version differs).
///
/// A view's version is the vector of its sources' library versions, under the definition's
/// `revision`. The fast path reads it from memory (`Libraries.viewVersion`, no database, for
/// views ``ViewPages`` calls warm): a 304 or a page loaded at that vector is answered on the
/// event loop. A commit in any source
/// changes the vector, so every page of the view becomes `outdated`.
///
/// In the page cache the model's single `Int64` version is the sum of the source versions,
/// and the revision is part of the key. Under one revision the sources are fixed and each
/// library version only grows (a re-created library continues its numbers), so two vectors of
/// one revision with the same sum are the same vector: the sum is exact, not a hash. Pages of
/// a deleted view are erased when a view is created (``ViewPages/definitionsChanged()``), so a
/// re-created view with an old revision number never meets them.
struct ViewListRoute {
    /// A page ready to send.
    struct CachedPage: Sendable {
        /// The body (unrendered while only HEADs asked for the page; see ``PageBody``).
        var body: PageBody
        var etag: String
        /// The next page's path and query (the view's path with the next cursor).
        var nextPath: String?
    }

    let libraries: Libraries
    let pages: ViewPages
    let settings: SettingsService
    let seal: CursorSeal
    /// Counts the bodies rendered (a HEAD renders none).
    let renders: PageRenders
    /// The whole view as CSV, when the request asks for it (``CSVNegotiation``).
    let csv: CSVExport

    /// A view page query as the model knows it: the view and its definition's revision, and
    /// the list query under the paging limits in force.
    struct PageKey: Hashable, Sendable {
        var view: ViewID
        var revision: Int64
        var defaultLimit: Int
        var maxLimit: Int
        var query: String

        /// `"w<sum>-<hash>"`: the hash covers the view, its revision, every source version, the
        /// limits and the query, so it changes with every commit in any source, with every
        /// change of the definition and with every query.
        func etag(versions: [Int64]) -> String {
            var text = view.rawValue + "|" + ViewVersion(revision: revision, versions: versions).tag + "|"
            text += "\(defaultLimit),\(maxLimit)|" + query
            return "\"w\(versions.reduce(0, &+))-\(ETag.hash(Array(text.utf8)))\""
        }
    }

    func register(into routes: inout RouterBuilder) {
        // A page read costs what the query asks, times the view's sources: filters, deep
        // offsets and counts run in the read lane, pages bounded by their shape on the
        // workers (``ListReadCost``).
        routes.add(
            .get, "/views/{view}/albums", options: .expensiveRead(when: ListReadCost.isExpensiveViewList), fast: respondFromMemory,
            blocking: respond)
    }

    /// The fast path: a 304 from the version vector alone, or a page loaded at it; nil when
    /// the page must be read (`respond`).
    func respondFromMemory(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse? {
        // A request that may ask for CSV is decided on the worker (a byte scan here).
        if CSVNegotiation.mayAskForCSV(request) { return nil }
        let view = try ViewRoutes.viewID(context)
        guard pages.isWarm(view), let known = libraries.viewVersionInMemory(view) else { return nil }
        let key = key(request, view: view, version: known, paging: settings.paging)
        return try fromMemory(
            request, context, key: key, version: (known.versions, known.versions.reduce(0, &+)), queryIsValid: false, mayRender: false)
    }

    /// Any view page request: from memory if it can be, else read in one snapshot of the
    /// sources (identical concurrent requests share the read).
    func respond(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        if CSVNegotiation.mayAskForCSV(request), try CSVNegotiation.asksForCSV(request) {
            return try csvResponse(request, context)
        }
        let (key, version, paging) = try lookup(request, context)
        pages.warmed(key.view)  // its definition and every source's version are in memory now
        if let answered = try fromMemory(request, context, key: key, version: version, queryIsValid: false, mayRender: true) {
            return answered
        }
        // The query before any precondition (see AlbumListRoute): 400 even with `If-None-Match: *`.
        let pageRequest = try AlbumListRoute.pageRequest(from: request, paging: paging, seal: seal)
        if let answered = try fromMemory(request, context, key: key, version: version, queryIsValid: true, mayRender: true) {
            return answered
        }
        let pretty = request.wantsPretty
        let isHead = request.method == .head
        let page = try pages.cache.value(key, version: version.sum) { [renders] in
            let before = try libraries.view(key.view)
            let page = try libraries.page(view: key.view, pageRequest)
            let after = try libraries.viewVersion(key.view)
            let sources = before.sources
            // The definition changed around the read: the page is this request's answer but
            // is never kept as current for the key's revision.
            let steady = before.revision == key.revision && after.revision == key.revision
            let next = page.next?.encoded(sealedWith: seal)
            let render: PageBody.Render = {
                try renders.render { try AlbumRepresentation.listBytes(page, next: next, pretty: pretty, sources: sources) }
            }
            let body = isHead ? PageBody(deferred: render) : PageBody(bytes: try render())
            let cached = CachedPage(
                body: body, etag: key.etag(versions: page.versions), nextPath: next.map { "\(request.path)?" + AlbumListRoute.nextQuery(request, cursor: $0) })
            let sum = steady ? page.versions.reduce(0, &+) : -1
            let bodyCost = body.bytes?.count ?? PageBody.estimatedCost(of: page)
            return .init(value: cached, version: sum, cost: bodyCost + key.query.utf8.count + 256)
        }
        return try Self.response(page, request: request, context: context)
    }

    /// The whole view as CSV (``CSVExport``), named after the view: its definition is read
    /// here, so a missing view is a 404 before the download starts.
    private func csvResponse(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let view = try ViewRoutes.viewID(context)
        _ = try libraries.view(view)
        try CSVNegotiation.refusePaging(request)
        let query = try AlbumListRoute.pageRequest(from: request, seal: seal).query
        return try csv.response(request, name: view.rawValue) { [libraries] page in _ = try libraries.walkList(view: view, query, page) }
    }

    /// The cache key under the paging limits in force, and the view's version (memory once
    /// the view and its sources are known; the first request may read them).
    private func lookup(
        _ request: HTTPRequest, _ context: RequestContext
    ) throws -> (PageKey, (versions: [Int64], sum: Int64), LibrarySettings.Paging) {
        let view = try ViewRoutes.viewID(context)
        let paging = settings.paging
        let version = try libraries.viewVersion(view)
        return (key(request, view: view, version: version, paging: paging), (version.versions, version.versions.reduce(0, &+)), paging)
    }

    private func key(_ request: HTTPRequest, view: ViewID, version: ViewVersion, paging: LibrarySettings.Paging) -> PageKey {
        PageKey(
            view: view, revision: version.revision,
            defaultLimit: paging.defaultLimit, maxLimit: paging.maxLimit, query: String(request.rawQuery ?? ""))
    }

    private func fromMemory(
        _ request: HTTPRequest, _ context: RequestContext, key: PageKey, version: (versions: [Int64], sum: Int64),
        queryIsValid: Bool, mayRender: Bool
    ) throws -> HTTPResponse? {
        let cached = pages.cache.current(key, version: version.sum)
        // A cached page proves the query valid, and so does one still held outdated (see
        // `AlbumListRoute`); otherwise no 304 before it was parsed.
        guard cached != nil || queryIsValid || (request.headers["If-None-Match"] != nil && pages.cache.holdsValue(for: key)) else {
            return nil
        }
        let etag = cached?.etag
        if let matched = request.headers.withFirstValue("If-None-Match", { ETag.list($0, matches: etag ?? key.etag(versions: version.versions)) }),
            matched
        {
            return HTTPResponse(status: .notModified, headers: ["ETag": etag ?? key.etag(versions: version.versions), "Cache-Control": "no-cache"])
        }
        guard let cached else { return nil }
        // A page only a HEAD read has no body yet: a GET renders it on the worker pool.
        if !mayRender, request.method != .head, cached.body.bytes == nil { return nil }
        return try Self.response(cached, request: request, context: context)
    }

    /// 200 with a page: its ETag, and `Link: rel="next"` to this path with the next cursor.
    static func response(_ page: CachedPage, request: HTTPRequest, context: RequestContext) throws -> HTTPResponse {
        var headers: HTTPHeaders = ["ETag": page.etag, "Cache-Control": "no-cache"]
        if let next = page.nextPath {
            headers.add("Link", "<\(RequestInput.absoluteURL(next, context))>; rel=\"next\"")
        }
        return try PageBody.response(page.body, request: request, headers: headers)
    }

}
