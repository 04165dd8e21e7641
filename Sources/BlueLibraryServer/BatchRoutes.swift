import BlueLibraryAPI
import Essentials
import HTTPServer
import Library

/// `POST /batch` (and `/libraries/{lib}/batch`): many changes to one library in one request,
/// one transaction and one undo step (`LibraryFacade.apply`).
///
/// The answer of a committed batch is 200 with one result per operation, each the status and
/// body its single request would have had:
/// `{"atomic": true, "version": 42, "applied": 2, "refused": 0, "results": [{"operation": 0,
/// "status": 201, "version": 41, "etag": "\"…\"", "album": {…}}, …]}`. An atomic batch with a
/// refused operation answers that operation's problem (its status, its fields named
/// `operations[k].…`) and applies nothing.
struct BatchRoutes {
    let libraries: LibraryResolver
    let idempotency: IdempotencyGuard
    let covers: any CoverSource

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
            switch try facade.apply(batch.operations.map(Self.step), atomic: batch.atomic) {
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
            case .move, .delete: continue
            }
        }
    }

    private static func response(_ batch: BatchRequest, results: [BatchResult], version: Int64, pretty: Bool) throws -> HTTPResponse {
        var json = JSONWriter(capacity: 256 + results.count * 400)
        json.beginObject()
        json.key("atomic"); json.bool(batch.atomic)
        json.key("version"); json.number(version)
        json.key("applied"); json.number(results.count { if case .applied = $0 { true } else { false } })
        json.key("refused"); json.number(results.count { if case .refused = $0 { true } else { false } })
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

    /// The problem operation `number` got, as its single request would have (a move past the
    /// end is a 422 naming `index`, as `POST /albums/{id}/move` says), with its fields named
    /// `operations[k].…`; an atomic batch's says that nothing was applied.
    static func problem(_ error: LibraryError, operation number: Int, of operation: BatchRequest.Operation, atomic: Bool) -> HTTPError {
        let path = "operations[\(number)]"
        var problem: HTTPError
        switch (error, operation) {
        case (.indexOutOfRange, .move):
            problem = (error.inContext(field: "index") as? HTTPError) ?? HTTPError(.unprocessableContent, detail: error.message)
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
        case .move: "move"
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
