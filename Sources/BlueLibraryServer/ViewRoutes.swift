import BlueLibraryAPI
import HTTPServer
import Library

/// `/views`, `/views/{view}`, `POST /views/{view}/albums` and `/views/{view}/albums/at/{index}`:
/// composite views (one list made of several libraries) and index addressing through them.
/// The paged list is ``ViewListRoute``.
///
/// Rules:
/// - A view id that breaks the id rule is simply not found (404), like an impossible album id.
/// - Albums reached through a view say which `library` holds them; their `index` is the view
///   index (the position in the view's list, which is the route's address).
/// - Writes through a view land in the owning library: its version, events, change feed and
///   undo stack (`POST /libraries/{lib}/undo` takes them back).
/// - Creating, changing or deleting a view erases the view page cache: a re-created view may
///   reuse an old revision number, and its pages must never be served from the old one's.
struct ViewRoutes {
    let libraries: Libraries
    let idempotency: IdempotencyGuard
    let covers: any CoverSource
    let pages: ViewPages
    /// Lists show the views whose sources the caller's key may all read.
    let access: AccessControl

    func register(into routes: inout RouterBuilder) {
        routes.add(.get, "/views", options: .workerPool, list)
        routes.add(.post, "/views", options: .workerPool, create)
        routes.add(.get, "/views/{view}", options: .workerPool, show)
        routes.add(.patch, "/views/{view}", options: .workerPool, update)
        routes.add(.delete, "/views/{view}", options: .workerPool, delete)
        routes.add(.post, "/views/{view}/albums", options: .workerPool, addAlbum)
        routes.add(.get, "/views/{view}/albums/at/{index}", options: RouteOptions(execution: .workerPool, expensiveRead: true), showAt)
        routes.add(.delete, "/views/{view}/albums/at/{index}", options: .workerPool, deleteAt)
    }

    /// The view id from the path; an impossible id is simply not found.
    static func viewID(_ context: RequestContext) throws -> ViewID {
        let text = try context.parameter("view")
        guard (try? ViewID(validating: text)) != nil else {
            throw LibraryError.viewNotFound(ViewID(rawValue: String(text.prefix(60))))
        }
        return ViewID(rawValue: text)
    }

    func list(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let readable = try libraries.views().filter { view in view.sources.allSatisfy { access.allows(request, .read, library: $0) } }
        let documents = try readable.map { view throws(LibraryError) in try viewDocument(view) }
        return try ConditionalGET.respond(
            to: request,
            with: JSONBody.response(ViewListDocument(views: documents), pretty: request.wantsPretty, headers: ["Cache-Control": "no-cache", "Vary": "Authorization"]))
    }

    func create(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        try RequestInput.requireJSON(request)
        return try idempotency.run(request, context: context) {
            let created: ViewDefinition
            do throws(LibraryError) {
                let body = try ViewDefinitionRequest.decodeCreation(json: request.body)
                created = try libraries.createView(id: body.id, name: body.name, sources: body.sources, filter: body.filter)
            } catch {
                throw error.inContext(invalidTitle: Self.invalidTitle)
            }
            pages.definitionsChanged()
            let document = try viewDocument(created)
            return try JSONBody.response(
                document, status: .created, pretty: request.wantsPretty,
                headers: ["Location": RequestInput.absoluteURL("/views/\(created.id.rawValue)", context)])
        }
    }

    func show(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let id = try Self.viewID(context)
        let document = try viewDocument(try libraries.view(id))
        return try ConditionalGET.respond(
            to: request, with: JSONBody.response(document, pretty: request.wantsPretty, headers: ["Cache-Control": "no-cache", "Vary": "Authorization"]))
    }

    func update(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        try RequestInput.requireJSON(request)
        let id = try Self.viewID(context)
        let updated: ViewDefinition
        do throws(LibraryError) {
            let body = try ViewDefinitionRequest.decodeUpdate(json: request.body)
            updated = try libraries.updateView(id, name: body.name, sources: body.sources, filter: body.filter)
        } catch {
            throw error.inContext(invalidTitle: Self.invalidTitle)
        }
        pages.definitionsChanged()
        let document = try viewDocument(updated)
        return try JSONBody.response(document, pretty: request.wantsPretty)
    }

    func delete(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let id = try Self.viewID(context)
        try libraries.deleteView(id)
        pages.definitionsChanged()
        return HTTPResponse(status: .noContent)
    }

    /// `POST /views/{view}/albums`: adds to the library that owns the view position
    /// `?index=` (or the body's `index`); no index, or one past the end, appends to the last
    /// source. 201 with the album, its view `index` and `library`, and a `Location` under that
    /// library.
    func addAlbum(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        try RequestInput.requireJSON(request)
        let id = try Self.viewID(context)
        return try idempotency.run(request, context: context) {
            let add = try AlbumAddRequest.decode(json: request.body)
            let queryIndex = try QueryParameters(request).index("index")
            let client = try RequestInput.client(request)
            let created = try libraries.add(view: id, input: add.input, at: queryIndex ?? add.index, client: client)
            if let url = created.album.coverUrl { covers.prefetch(url: url) }
            let path = "/libraries/\(created.library.rawValue)/albums/\(created.album.id.rawValue)"
            return try Self.response(created, request: request, status: .created,
                                     headers: ["Location": RequestInput.absoluteURL(path, context)])
        }
    }

    func showAt(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let id = try Self.viewID(context)
        let index = try RequestInput.index(try context.parameter("index"))
        let found = try libraries.album(view: id, at: index)
        return try Self.response(found, request: request)
    }

    /// Deletes the album at a view index from its library (undoable there).
    func deleteAt(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let id = try Self.viewID(context)
        let index = try RequestInput.index(try context.parameter("index"))
        let removed = try libraries.delete(view: id, at: index)
        return try Self.response(removed, request: request)
    }

    /// The title of a 422 for a view's definition (the domain's names an album).
    static let invalidTitle = "Invalid view"

    /// The view document with each source's current version (from memory).
    private func viewDocument(_ view: ViewDefinition) throws(LibraryError) -> ViewDocument {
        let version = try libraries.viewVersion(view.id)
        return ViewDocument(view, versions: Dictionary(zip(view.sources, version.versions), uniquingKeysWith: { first, _ in first }))
    }

    /// An album reached through a view: its fields, its view `index`, its `library`. The ETag
    /// is `GET /albums/{id}`'s (fields hash and index) with the library after it,
    /// `"<fields>.<index>.<library>"`: an album moved to another library at the same view index
    /// is a new representation. (`If-Match` compares the fields part only, as everywhere.)
    static func response(
        _ item: ViewAlbum, request: HTTPRequest, status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders()
    ) throws -> HTTPResponse {
        var headers = headers
        let (body, etag) = try AlbumRepresentation.encoded(
            IndexedAlbum(album: item.album, index: item.index), library: item.library, pretty: request.wantsPretty)
        headers.set("ETag", String(etag.dropLast()) + ".\(item.library.rawValue)\"")
        headers.set("Cache-Control", "no-cache")
        let response = HTTPResponse(status: status, contentType: "application/json", bytes: body, headers: headers)
        return request.method == .get || request.method == .head ? try ConditionalGET.respond(to: request, with: response) : response
    }
}
