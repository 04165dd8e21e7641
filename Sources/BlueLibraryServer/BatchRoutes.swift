import BlueLibraryAPI
import Essentials
import HTTPServer
import Library

/// `POST /batch` (and `/libraries/{lib}/batch`): many changes to one library (and moves out of
/// it to others) in one request, one transaction and one undo step (`LibraryFacade.apply`).
///
/// The answer of a committed batch is 200 with one result per operation, each the status and
/// body its single request would have had:
/// `{"atomic": true, "version": 42, "applied": 2, "refused": 0, "results": [{"operation": 0,
/// "status": 201, "version": 41, "etag": "\"…\"", "album": {…}}, …]}`. A move to another library
/// answers the album with its `library` and its index there, and `arrivalVersion` (the other
/// library's version its arrival made); the top level then has `destinations`, each such
/// library's version after the batch. An atomic batch with a refused operation answers that
/// operation's problem (its status, its fields named `operations[k].…`) and applies nothing.
struct BatchRoutes {
    let libraries: LibraryResolver
    let idempotency: IdempotencyGuard
    let covers: any CoverSource
    /// Where a batch may move albums to.
    let access: AccessControl

    /// A batch's body: 1,000 adds with long fields fit (about 3 MB at the field limits).
    static let maxBodyBytes = 4 << 20

    func register(into routes: inout RouterBuilder) {
        routes.addForEachLibrary(.post, "/batch", options: RouteOptions(execution: .workerPool, maxBodyBytes: Self.maxBodyBytes), apply)
    }

    func apply(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        try RequestInput.requireJSON(request)
        let facade = try libraries.facade(context)
        return try idempotency.run(request, context: context) {
            let batch = try BatchRequest.decode(json: request.body)
            // A library the key may not write to is, for it, one that does not exist.
            let mayMoveTo = { (library: LibraryID) in access.allows(request, .write, library: library) }
            switch try facade.apply(batch.operations.map(Self.step), atomic: batch.atomic, mayMoveTo: mayMoveTo) {
            case let .rolledBack(operation, error):
                throw Self.problem(error, operation: operation, of: batch.operations[operation], atomic: true)
            case let .committed(results, version):
                prefetchCovers(batch.operations, results)
                return try Self.response(batch, results: results, version: version, pretty: request.wantsPretty)
            }
        }
    }

    private static func step(_ operation: BatchRequest.Operation) -> BatchStep {
        switch operation {
        case let .add(input, index): .add(input, index: index)
        case let .update(target, patch, ifMatch): .update(target.library, patch, ifMatch: ifMatch.map(AlbumRepresentation.ifMatch(header:)))
        case let .move(target, index): .move(target.library, to: index)
        case let .moveTo(target, library, index): .moveToLibrary(target.library, library: LibraryID(rawValue: library), index: index)
        case let .delete(target, ifMatch): .delete(target.library, ifMatch: ifMatch.map(AlbumRepresentation.ifMatch(header:)))
        }
    }

    /// New cover URLs start loading, as after a single add or patch.
    private func prefetchCovers(_ operations: [BatchRequest.Operation], _ results: [BatchResult]) {
        for (operation, result) in zip(operations, results) {
            guard case let .applied(item, _?) = result, let url = item.album.coverUrl else { continue }
            switch operation {
            case .add: covers.prefetch(url: url)
            case let .update(_, patch, _): if case .set = patch.coverUrl { covers.prefetch(url: url) }
            case .move, .moveTo, .delete: continue
            }
        }
    }

    private static func response(_ batch: BatchRequest, results: [BatchResult], version: Int64, pretty: Bool) throws -> HTTPResponse {
        var json = JSONWriter(capacity: 256 + results.count * 400)
        json.beginObject()
        json.key("atomic"); json.bool(batch.atomic)
        json.key("version"); json.number(version)
        let refused = results.count { if case .refused = $0 { true } else { false } }
        json.key("applied"); json.number(results.count - refused)
        json.key("refused"); json.number(refused)
        let destinations = Self.destinations(results)
        if !destinations.isEmpty {
            json.key("destinations")
            json.beginObject()
            for (library, version) in destinations {
                json.key(library.rawValue); json.number(version)
            }
            json.endObject()
        }
        json.key("results")
        json.beginArray()
        for (number, (operation, result)) in zip(batch.operations, results).enumerated() {
            json.beginObject()
            json.key("operation"); json.number(number)
            switch result {
            case let .applied(item, version):
                json.key("status"); json.number(operation.isAdd ? 201 : 200)
                json.key("version")
                if let version { json.number(version) } else { json.null() }
                let (body, etag) = try AlbumRepresentation.encoded(item, pretty: false)
                json.key("etag"); json.string(etag)
                json.key("album"); json.raw(Array(body.dropLast()))  // without its newline
            case let .moved(item, library, version, arrival):
                json.key("status"); json.number(200)
                json.key("version"); json.number(version)
                json.key("arrivalVersion"); json.number(arrival)
                let (body, etag) = try AlbumRepresentation.encoded(item, library: library, pretty: false)
                json.key("etag"); json.string(etag)
                json.key("album"); json.raw(Array(body.dropLast()))
            case let .refused(error):
                let problem = problem(error, operation: number, of: operation, atomic: false)
                json.key("status"); json.number(problem.status.code)
                json.key("problem"); problem.write(to: &json)
            }
            json.endObject()
        }
        json.endArray()
        json.endObject()
        json.newline()
        let body = pretty ? JSONIndenter.indent(json.bytes) : json.bytes
        return HTTPResponse(contentType: "application/json", bytes: body)
    }

    /// Each other library the batch moved albums to, with its version after the batch (its
    /// last arrival's: the batch held that library's writer throughout), in the order first
    /// named.
    static func destinations(_ results: [BatchResult]) -> [(LibraryID, Int64)] {
        var versions: [(LibraryID, Int64)] = []
        for case let .moved(_, library, _, arrival) in results {
            if let known = versions.firstIndex(where: { $0.0 == library }) {
                versions[known].1 = max(versions[known].1, arrival)
            } else {
                versions.append((library, arrival))
            }
        }
        return versions
    }

    /// The problem operation `number` got, as its single request would have (a move past the
    /// end is a 422 naming `index`, as `POST /albums/{id}/move` says), with its fields named
    /// `operations[k].…`; an atomic batch's says that nothing was applied.
    static func problem(_ error: LibraryError, operation number: Int, of operation: BatchRequest.Operation, atomic: Bool) -> HTTPError {
        let path = "operations[\(number)]"
        var problem: HTTPError
        switch (error, operation) {
        case (.indexOutOfRange, .move), (.indexOutOfRange, .moveTo):
            problem = (error.inContext(field: "index") as? HTTPError) ?? HTTPError(.unprocessableContent, detail: error.message)
        case (.libraryNotFound, .moveTo):
            // As `POST /albums/{id}/move` with a `library` that does not exist: 422 naming it.
            problem = (error.inContext(field: "library") as? HTTPError) ?? HTTPError(.unprocessableContent, detail: error.message)
        default:
            problem = error.problem ?? HTTPError(.internalServerError, detail: error.message)
        }
        let fieldPrefix = operation.isUpdate && problem.errors.contains { $0.field != "ref" } ? path + ".patch." : path + "."
        problem.errors = problem.errors.map { .init(field: fieldPrefix + $0.field, message: "\(fieldPrefix)\($0.message)") }
        if problem.errors.isEmpty {
            let field = "\(path).\(operation.targetField)"
            problem.errors = [.init(field: field, message: "\(field): \(problem.detail)")]
        }
        problem.detail = "Operation \(number) (\(operation.kind)) was refused: \(problem.detail)"
            + (atomic ? ". Nothing in the batch was applied; fix it, or send the batch with \"atomic\": false to apply the rest." : "")
        return problem
    }
}

extension BatchRequest.Target {
    /// The facade's form of the target.
    var library: BatchTarget {
        switch self {
        case let .id(id): .id(id)
        case let .ref(operation): .added(by: operation)
        case let .index(index): .index(index)
        }
    }
}

extension BatchRequest.Operation {
    var kind: String {
        switch self {
        case .add: "add"
        case .update: "update"
        case .move, .moveTo: "move"
        case .delete: "delete"
        }
    }

    /// The field that named what the operation acts on: `id`, `ref` or `index` (an add's
    /// position).
    var targetField: String {
        switch target {
        case .id?: "id"
        case .ref?: "ref"
        case .index?, nil: "index"
        }
    }

    var isAdd: Bool { if case .add = self { true } else { false } }
    var isUpdate: Bool { if case .update = self { true } else { false } }
}
