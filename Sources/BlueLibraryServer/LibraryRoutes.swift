import BlueLibraryAPI
import HTTPServer
import Library

/// The catalog of libraries: `GET/POST /libraries`, `GET/PATCH/DELETE /libraries/{lib}`
/// (`?force=true` deletes a library that holds albums or that views use). Each handler makes
/// one `Libraries` call; the domain holds every rule (`default` is never deleted, 409s).
struct LibraryRoutes {
    let libraries: LibraryResolver
    let idempotency: IdempotencyGuard
    /// A deleted library's event hub is removed and its streams end.
    let hubs: EventHubs
    /// The articles the artist sort ignores now (a new library's keys are made with them from
    /// its first album; `SortKeyRebuild` keeps them in step afterwards).
    let sortArticles: @Sendable () -> SortArticles
    /// Lists show the libraries the caller's key may read.
    let access: AccessControl

    func register(into routes: inout RouterBuilder) {
        routes.add(.get, "/libraries", options: .workerPool, list)
        routes.add(.post, "/libraries", options: .workerPool, create)
        routes.add(.get, "/libraries/{lib}", options: .workerPool, show)
        routes.add(.patch, "/libraries/{lib}", options: .workerPool, rename)
        routes.add(.delete, "/libraries/{lib}", options: .workerPool, delete)
    }

    func list(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let records = try libraries.libraries.list().filter { access.allows(request, .read, library: $0.id) }
        return try ConditionalGET.respond(
            to: request,
            with: JSONBody.response(LibraryListDocument(libraries: records.map(LibraryDocument.init)), pretty: request.wantsPretty,
                                    headers: ["Cache-Control": "no-cache", "Vary": "Authorization"]))
    }

    /// 201 with `Location: /libraries/{id}`; 422 for a bad id or name, 409 when the id is taken.
    func create(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        try RequestInput.requireJSON(request)
        return try idempotency.run(request, context: context) {
            let input: LibraryCreateRequest
            do throws(LibraryError) {
                input = try LibraryCreateRequest.decode(json: request.body)
            } catch {
                throw error.inContext(invalidTitle: Self.invalidTitle)
            }
            let record = try libraries.libraries.create(id: input.id, name: input.name)
            // Empty: only the articles are stored. Should this fail, the next pass of
            // `SortKeyRebuild` stores them (and remakes any key made meanwhile).
            _ = try? libraries.libraries.facade(record.id).setSortArticles(sortArticles())
            return try JSONBody.response(
                LibraryDocument(record), status: .created, pretty: request.wantsPretty,
                headers: ["Location": RequestInput.absoluteURL("/libraries/\(record.id.rawValue)", context)])
        }
    }

    func show(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let id = try LibraryResolver.libraryID(context)
        let record = try libraries.libraries.record(id)
        return try ConditionalGET.respond(
            to: request,
            with: JSONBody.response(LibraryDocument(record), pretty: request.wantsPretty, headers: ["Cache-Control": "no-cache"]))
    }

    func rename(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        try RequestInput.requireJSON(request)
        let id = try LibraryResolver.libraryID(context)
        let name: String
        do throws(LibraryError) {
            name = try LibraryRenameRequest.decode(json: request.body)
        } catch {
            throw error.inContext(invalidTitle: Self.invalidTitle)
        }
        let record = try libraries.libraries.rename(id, name: name)
        return try JSONBody.response(LibraryDocument(record), pretty: request.wantsPretty)
    }

    /// 204; 409 for `default`, for a library with albums or used by views without `?force=true`.
    func delete(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let id = try LibraryResolver.libraryID(context)
        let force = try QueryParameters(request).boolean("force") ?? false
        try libraries.libraries.delete(id, force: force)
        hubs.libraryDeleted(id)
        return HTTPResponse(status: .noContent)
    }
}

extension LibraryRoutes {
    /// The title of a 422 for a library's body (the domain's names an album).
    static let invalidTitle = "Invalid library"
}

/// A library on the wire: `{"id", "name", "albumCount", "version"}`.
struct LibraryDocument: Encodable {
    let id: String
    let name: String
    let albumCount: Int
    let version: Int64

    init(_ record: LibraryRecord) {
        id = record.id.rawValue
        name = record.name
        albumCount = record.albumCount
        version = record.version
    }
}

/// `GET /libraries`: `{"libraries": [...]}`, ordered by id.
struct LibraryListDocument: Encodable {
    let libraries: [LibraryDocument]
}
