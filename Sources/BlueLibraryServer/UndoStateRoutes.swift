import HTTPServer
import Library

/// `/undo` (the command stack) and `/state` (the saved current album, per client), each also
/// under `/libraries/{lib}`: every library has its own stack and states.
struct UndoStateRoutes {
    let libraries: LibraryResolver
    /// Which other libraries an undo may change for the caller (a move's or a batch's peers).
    let access: AccessControl

    func register(into routes: inout RouterBuilder) {
        routes.addForEachLibrary(.get, "/undo", options: .workerPool) { [libraries] request, context in
            let facade = try libraries.facade(context)
            let status = try facade.undoStatus()
            return try ConditionalGET.respond(
                to: request,
                with: JSONBody.response(UndoStatusDocument(status), pretty: request.wantsPretty, headers: ["Cache-Control": "no-cache"]))
        }
        routes.addForEachLibrary(.post, "/undo", options: .workerPool) { [libraries, access] request, context in
            let facade = try libraries.facade(context)
            let client = try RequestInput.client(request)
            let result = try facade.undo(client: client, reaches: { access.allows(request, .write, library: $0) })
            return try JSONBody.response(UndoResultDocument(result), pretty: request.wantsPretty)
        }
        routes.addForEachLibrary(.get, "/state", options: .workerPool) { [libraries] request, context in
            let facade = try libraries.facade(context)
            let client = try RequestInput.client(request)
            let state = try facade.state(client: client)
            return try ConditionalGET.respond(
                to: request, with: JSONBody.response(state, pretty: request.wantsPretty, headers: ["Cache-Control": "no-cache"]))
        }
        routes.addForEachLibrary(.put, "/state", options: .workerPool) { [libraries] request, context in
            try RequestInput.requireJSON(request)
            let facade = try libraries.facade(context)
            let client = try RequestInput.client(request)
            let input = try StateRequest.decode(json: request.body)
            let state: SavedState
            do throws(LibraryError) {
                switch input {
                case let .index(index): state = try facade.setState(client: client, index: index)
                case let .album(id): state = try facade.setState(client: client, albumID: id)
                }
            } catch {
                // The album or index named in a valid body does not exist: a bad value, 422.
                throw error.inContext(field: input.fieldName)
            }
            return try JSONBody.response(state, pretty: request.wantsPretty)
        }
    }
}

extension StateRequest {
    var fieldName: String {
        switch self {
        case .index: "currentAlbumIndex"
        case .album: "albumID"
        }
    }
}

/// `GET /undo`: `{"depth": 2, "canUndo": true, "next": "re-insert 'Best of Bowie' at index 0"}`.
struct UndoStatusDocument: Encodable {
    let depth: Int
    let canUndo: Bool
    let next: String?

    init(_ status: UndoStatus) {
        depth = status.depth
        canUndo = status.canUndo
        next = status.next
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(depth, forKey: .depth)
        try container.encode(canUndo, forKey: .canUndo)
        try container.encode(next, forKey: .next)
    }

    enum CodingKeys: String, CodingKey { case depth, canUndo, next }
}

/// `POST /undo`: what was undone and where its album is now.
struct UndoResultDocument: Encodable {
    let undone: String
    let album: IndexedAlbum?
    let version: Int64

    init(_ result: UndoResult) {
        undone = result.command.summary
        album = result.album
        version = result.version
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(undone, forKey: .undone)
        try container.encode(album, forKey: .album)
        try container.encode(version, forKey: .version)
    }

    enum CodingKeys: String, CodingKey { case undone, album, version }
}
