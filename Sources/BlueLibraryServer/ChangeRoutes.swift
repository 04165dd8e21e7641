import BlueLibraryAPI
import HTTPServer
import Library

/// `GET /changes?since=<version>&limit=` (and `/libraries/{lib}/changes`): a library's change
/// feed for clients that sync rather than listen. 410 Gone when `since` is older than what is
/// kept (reload everything).
struct ChangeRoutes {
    let libraries: LibraryResolver

    static let defaultLimit = 100
    static let maxLimit = 1000

    func register(into routes: inout RouterBuilder) {
        routes.addForEachLibrary(.get, "/changes", options: .workerPool) { [libraries] request, context in
            let facade = try libraries.facade(context)
            let parameters = QueryParameters(request)
            guard let since = try parameters.integer("since", in: IntegerRules.versions).map(Int64.init) else {
                throw QueryParameters.invalid(
                    "since", "since is required: the library version you last synced to (0 for everything still kept), as in /changes?since=0.")
            }
            let limit = try parameters.integer("limit", in: 1...Self.maxLimit) ?? Self.defaultLimit
            let page = try facade.changes(since: since, limit: limit)
            return try ConditionalGET.respond(
                to: request,
                with: JSONBody.response(ChangePageDocument(page), pretty: request.wantsPretty, headers: ["Cache-Control": "no-cache"]))
        }
    }
}

/// `{"changes": [{"version", "kind", "id", "index"}], "next": version, "more": bool}`; a change
/// also has `"from"` (moved: the index before), `"movedFrom"` (added: arrived from that
/// library) or `"movedTo"` (deleted: left for that library), only when they apply.
struct ChangePageDocument: Encodable {
    struct Change: Encodable {
        let version: Int64
        let kind: String
        let id: String?
        let index: Int?
        let from: Int?
        let movedFrom: String?
        let movedTo: String?

        init(_ change: LibraryChange) {
            version = change.version
            kind = change.kind.rawValue
            id = change.id?.rawValue
            index = change.index
            from = change.kind == .moved ? change.fromIndex : nil
            movedFrom = change.kind == .added ? change.peer?.rawValue : nil
            movedTo = change.kind == .deleted ? change.peer?.rawValue : nil
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(version, forKey: .version)
            try container.encode(kind, forKey: .kind)
            try container.encode(id, forKey: .id)
            try container.encode(index, forKey: .index)
            try container.encodeIfPresent(from, forKey: .from)
            try container.encodeIfPresent(movedFrom, forKey: .movedFrom)
            try container.encodeIfPresent(movedTo, forKey: .movedTo)
        }

        enum CodingKeys: String, CodingKey { case version, kind, id, index, from, movedFrom, movedTo }
    }

    let changes: [Change]
    let next: Int64
    let more: Bool

    init(_ page: ChangePage) {
        changes = page.changes.map(Change.init)
        next = page.next
        more = page.more
    }
}
