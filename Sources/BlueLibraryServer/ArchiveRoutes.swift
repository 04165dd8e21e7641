import HTTPServer
import Library
import Synchronization

/// `GET /archive` streams the whole library as one versioned JSON document; `PUT /archive`
/// replaces the library from one, atomically.
struct ArchiveRoutes {
    let facade: LibraryFacade
    let idempotency: IdempotencyGuard
    let workers: ArchiveWorkers
    /// The largest archive `PUT /archive` takes.
    let maxImportBytes: Int
    /// Where `PUT /archive` keeps the upload while it arrives (the data directory).
    let spoolDirectory: String

    /// Bytes an export may queue for a slow client before the exporter waits for it.
    static let exportWindow = 512 * 1024

    /// Uploads at once: each holds a request worker while its client sends (a replacement of
    /// the whole library gains nothing from more), so slow uploads cannot take every worker.
    static let maximumConcurrentImports = 2
    let imports = ImportSlots()

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
        // The body streams to a file as it arrives (never whole in memory, and the database's
        // writer is not held while the client uploads), then is imported from a mapping.
        let options = RouteOptions(execution: .workerPool, maxBodyBytes: maxImportBytes, streamsBody: true)
        routes.add(.put, "/archive", options: options) { [spoolDirectory, imports] request, context in
            try RequestInput.requireJSON(request)
            guard imports.take(limit: Self.maximumConcurrentImports) else {
                throw HTTPError(.serviceUnavailable, detail: "Another archive import is running; retry when it is done.",
                                headers: ["Retry-After": "10"])
            }
            defer { imports.give() }
            let spool = try ArchiveSpool(directory: spoolDirectory)
            var fingerprint = IdempotencyGuard.Fingerprint(request)
            // `requireJSON` refused an empty body, so a streamed route has its stream.
            guard let stream = request.bodyStream else { throw HTTPError(.badRequest, detail: "Send the archive as the request body.") }
            while true {
                let next: [UInt8]?
                do {
                    next = try stream.next()
                } catch {
                    // The connection is gone or already answered: this response is not sent.
                    throw HTTPError(.badRequest, detail: "The archive did not arrive whole.")
                }
                guard let chunk = next else { break }
                try spool.write(chunk)
                fingerprint.add(chunk)
            }
            return try idempotency.run(request, fingerprint: fingerprint.value, context: context) {
                let summary = try spool.withMappedBytes { bytes, release in
                    try library { () throws(LibraryError) in try facade.importArchive(json: bytes, read: release) }
                }
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

/// Counts the imports running.
final class ImportSlots: Sendable {
    private let running = Mutex(0)

    func take(limit: Int) -> Bool {
        running.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func give() { running.withLock { $0 -= 1 } }
}

/// Threads for long exports, apart from the request workers.
struct ArchiveWorkers: Sendable {
    let pool: WorkerPool
    func run(_ work: @escaping @Sendable () -> Void) { pool.submit(work) }
}
