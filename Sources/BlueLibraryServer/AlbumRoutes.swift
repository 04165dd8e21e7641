import BlueLibraryAPI
import HTTPServer
import Library

/// `/albums`, `/albums/{id}`, `/albums/{id}/table`, `/albums/{id}/move`, `/albums/at/{index}`,
/// each also under `/libraries/{lib}` (without the prefix: `default`): each handler finds the
/// library's facade, decodes its input, makes one facade call and encodes the result.
struct AlbumRoutes {
    let libraries: LibraryResolver
    let idempotency: IdempotencyGuard
    /// Told about new cover URLs, so covers are fetched before anyone asks (the tutorial
    /// loaded them as the scroller showed each album).
    let covers: any CoverSource
    /// `GET /albums/{id}` responses by library, id and query, current at the library's version
    /// (made with ``cacheLimits`` by the composition root, which owns the clock).
    let albums: RequestModelCache<String, HTTPResponse>
    /// Who may move an album to which library.
    let access: AccessControl

    static let cacheLimits = RequestModelCache<String, HTTPResponse>.Limits(maxEntries: 4096, maxCost: 16 << 20)

    func register(into routes: inout RouterBuilder) {
        // Reads touch SQLite through the reader pool; writes wait for the single writer, so
        // they run on the worker pool and never stall an event loop.
        routes.addForEachLibrary(.post, "/albums", options: .workerPool, create)
        routes.addForEachLibrary(.get, "/albums/{id}", fast: showCached, blocking: show)
        routes.addForEachLibrary(.patch, "/albums/{id}", options: .workerPool, update)
        routes.addForEachLibrary(.delete, "/albums/{id}", options: .workerPool, delete)
        routes.addForEachLibrary(.get, "/albums/{id}/table", options: .workerPool, table)
        routes.addForEachLibrary(.post, "/albums/{id}/move", options: .workerPool, move)
        routes.addForEachLibrary(.get, "/albums/at/{index}", options: RouteOptions(execution: .workerPool, expensiveRead: true), showAt)
        routes.addForEachLibrary(.delete, "/albums/at/{index}", options: .workerPool, deleteAt)
    }

    func create(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        try RequestInput.requireJSON(request)
        let facade = try libraries.facade(context)
        return try idempotency.run(request, context: context) {
            let add = try AlbumAddRequest.decode(json: request.body)
            let queryIndex = try QueryParameters(request).index("index")
            let client = try RequestInput.client(request)
            let created = try facade.add(add.input, at: queryIndex ?? add.index, client: client)
            return try created201(created, request: request, context: context)
        }
    }

    /// One album, through the request model like list pages: answered from memory on the
    /// event loop while the library version is unchanged (nil otherwise, or when the library's
    /// facade is not in memory yet: `show` reads it on the worker pool).
    func showCached(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse? {
        guard let facade = try libraries.loaded(context), let version = facade.knownVersion() else { return nil }
        let key = try Self.cacheKey(request, context)
        guard let cached = albums.current(key, version: version) else { return nil }
        return try ConditionalGET.respond(to: request, with: cached)
    }

    /// One album read through the request model (concurrent misses share one read).
    func show(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let facade = try libraries.facade(context)
        let key = try Self.cacheKey(request, context)
        let version = try facade.currentVersion()
        let id = try RequestInput.albumID(context)
        let response = try albums.value(key, version: version) {
            // Kept under the version its own read saw, which may be newer than `version`.
            let (item, read) = try facade.versionedAlbum(id: id)
            var plain = request
            plain.headers.remove("If-None-Match")  // cache the full response, not a 304
            let response = try AlbumRepresentation.response(item, request: plain)
            guard case let .bytes(body) = response.body else { return .init(value: response, version: read, cost: 0) }
            return .init(value: response, version: read, cost: body.count + 512)
        }
        return try ConditionalGET.respond(to: request, with: response)
    }

    /// `GET /albums/{id}` responses are cached by library, id and query string (the library's
    /// versions are its own; `default` and its prefixed form share entries).
    static func cacheKey(_ request: HTTPRequest, _ context: RequestContext) throws -> String {
        let id = try context.parameter("id")
        let query = request.rawQuery ?? ""
        guard let library = context.parameters["lib"], library != LibraryID.default.rawValue else { return "\(id)?\(query)" }
        return "\(library)/\(id)?\(query)"
    }

    func update(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        try RequestInput.requireJSON(request)
        let facade = try libraries.facade(context)
        let id = try RequestInput.albumID(context)
        let patch = try AlbumPatch.decode(json: request.body)
        let ifMatch = AlbumRepresentation.ifMatch(request)
        let item = try facade.update(id: id, patch: patch, ifMatch: ifMatch)
        if case let .set(url) = patch.coverUrl { covers.prefetch(url: url) }
        return try AlbumRepresentation.response(item, request: request)
    }

    func delete(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let facade = try libraries.facade(context)
        let id = try RequestInput.albumID(context)
        let ifMatch = AlbumRepresentation.ifMatch(request)
        let removed = try facade.delete(id: id, ifMatch: ifMatch)
        return try deleted(removed, request: request)
    }

    func table(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let facade = try libraries.facade(context)
        let id = try RequestInput.albumID(context)
        let item = try facade.album(id: id)
        return try ConditionalGET.respond(
            to: request,
            with: JSONBody.response(item.album.tableRepresentation, pretty: request.wantsPretty, headers: ["Cache-Control": "no-cache"]))
    }

    /// `{"index": n}` moves within the route's library; `{"library": "jazz", "index": n}` moves
    /// the album to another library (index optional: the end), answering the album with its
    /// `library` and its index there. Naming the route's own library is a move within it (index
    /// optional there too: the end).
    func move(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        try RequestInput.requireJSON(request)
        let facade = try libraries.facade(context)
        let id = try RequestInput.albumID(context)
        let target = try MoveRequest.decode(json: request.body)
        do {
            if let destination = target.library {
                // A library the key may not write to is, for it, one that does not exist.
                guard access.allows(request, .write, library: destination) else { throw LibraryError.libraryNotFound(destination) }
                let item = try libraries.libraries.move(id, from: facade.library, to: destination, index: target.index)
                return try AlbumRepresentation.response(item, library: destination, request: request)
            }
            guard let index = target.index else {
                throw HTTPError(.unprocessableContent, detail: "The body must be {\"index\": n} with the target position.",
                                errors: [.init(field: "index", message: "index is required")])
            }
            let item = try facade.move(id: id, to: index)
            return try AlbumRepresentation.response(item, request: request)
        } catch let error as LibraryError {
            // A target past the end, or a target library that does not exist, is a bad value of
            // the body, not a missing resource: 422 naming the field (the path's album that does
            // not exist stays 404).
            switch error {
            case .indexOutOfRange: throw error.inContext(field: "index")
            case .libraryNotFound where target.library != nil: throw error.inContext(field: "library")
            default: throw error
            }
        }
    }

    func showAt(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let facade = try libraries.facade(context)
        let index = try RequestInput.index(try context.parameter("index"))
        let item = try facade.album(at: index)
        return try AlbumRepresentation.response(item, request: request)
    }

    func deleteAt(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let facade = try libraries.facade(context)
        let index = try RequestInput.index(try context.parameter("index"))
        let removed = try facade.delete(at: index)
        return try deleted(removed, request: request)
    }

    /// 201 with `Location` and the new album; its cover starts loading in the background.
    func created201(_ item: IndexedAlbum, request: HTTPRequest, context: RequestContext) throws -> HTTPResponse {
        if let url = item.album.coverUrl { covers.prefetch(url: url) }
        return try AlbumRepresentation.response(
            item, request: request, status: .created,
            headers: ["Location": RequestInput.absoluteURL(
                "\(LibraryResolver.pathPrefix(context))/albums/\(item.album.id.rawValue)", context)])
    }

    /// 200 with the removed album and the index it had, so a client can show what went.
    func deleted(_ item: IndexedAlbum, request: HTTPRequest) throws -> HTTPResponse {
        HTTPResponse(contentType: "application/json", bytes: try AlbumRepresentation.bytes(item, pretty: request.wantsPretty))
    }
}
