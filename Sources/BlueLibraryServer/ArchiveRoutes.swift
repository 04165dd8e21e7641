import HTTPServer
import Library

/// `GET /archive` streams the whole library as one versioned JSON document; `PUT /archive`
/// replaces the library from one, atomically.
struct ArchiveRoutes {
    let facade: LibraryFacade
    let idempotency: IdempotencyGuard
    let workers: ArchiveWorkers
    /// The largest archive `PUT /archive` takes.
    let maxImportBytes: Int

    /// Bytes an export may queue for a slow client before the exporter waits for it.
    static let exportWindow = 512 * 1024

    func register(into routes: inout RouterBuilder) {
        routes.add(.get, "/archive", options: .inline) { [facade, workers] _, _ in
            // The export runs on its own thread at the client's pace: a snapshot read of the
            // whole library must not hold one of the request workers for minutes.
            let body = HTTPStreamBody(endsOnShutdown: false) { writer in
                workers.run {
                    do {
                        _ = try facade.exportArchive { chunk throws in
                            guard writer.waitForCapacity(below: Self.exportWindow), writer.write(chunk) else {
                                throw ExportAborted()
                            }
                        }
                        writer.finish()
                    } catch {
                        writer.abort()
                    }
                }
            }
            return HTTPResponse(
                headers: ["Content-Type": "application/json",
                          "Content-Disposition": "attachment; filename=\"bluelibrary-archive.json\"",
                          "Cache-Control": "no-store"],
                body: .stream(body))
        }
        routes.add(.put, "/archive", options: RouteOptions(execution: .workerPool, maxBodyBytes: maxImportBytes)) { request, context in
            try RequestInput.requireJSON(request)
            return try idempotency.run(request, context: context) {
                let summary = try library { () throws(LibraryError) in try facade.importArchive(request.body) }
                return try JSONBody.response(ImportDocument(summary), pretty: request.wantsPretty)
            }
        }
    }

    struct ExportAborted: Error {}

    struct ImportDocument: Encodable {
        let albumCount: Int
        let stateCount: Int
        let version: Int64
        init(_ summary: ArchiveImportSummary) {
            albumCount = summary.albumCount
            stateCount = summary.stateCount
            version = summary.version
        }
    }
}

/// Threads for long exports, apart from the request workers.
struct ArchiveWorkers: Sendable {
    let pool: WorkerPool
    func run(_ work: @escaping @Sendable () -> Void) { pool.submit(work) }
}
