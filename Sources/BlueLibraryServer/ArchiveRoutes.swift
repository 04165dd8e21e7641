import Dispatch
import Essentials
import HTTPServer
import Library
import Synchronization

/// `GET /archive` streams the whole library as one versioned JSON document; `PUT /archive`
/// replaces the library from one, atomically. Both also under `/libraries/{lib}` (the
/// document says which library it came from; an import goes into the route's library).
struct ArchiveRoutes {
    let libraries: LibraryResolver
    let idempotency: IdempotencyGuard
    let workers: ArchiveWorkers
    /// The largest archive `PUT /archive` takes.
    let maxImportBytes: Int
    /// Whether the caller may learn which other library holds an album id.
    let access: AccessControl
    /// Where `PUT /archive` keeps the upload while it arrives (the data directory).
    let spoolDirectory: String
    /// How slow an export's client may be, and how long an export waits for its turn.
    var exportPolicy = ExportPolicy()

    /// Bytes an export may queue for a slow client before the exporter waits for it.
    static let exportWindow = 512 * 1024

    /// Uploads at once: each holds a request worker while its client sends (a replacement of
    /// the whole library gains nothing from more), so slow uploads cannot take every worker.
    static let maximumConcurrentImports = 2
    let imports = ImportSlots()

    func register(into routes: inout RouterBuilder) {
        routes.addForEachLibrary(.get, "/archive", options: .workerPool) { [libraries, workers, exportPolicy] _, context in
            let facade = try libraries.facade(context)
            // An export holds one read snapshot from its first byte to its last, which keeps
            // the WAL from restarting: exports (archives and CSV lists) run one per export
            // thread, a request waits for its turn at most `queueDeadline` (on a request
            // worker, at most `maxWaiting` of them), and the client must keep up
            // `minimumBytesPerSecond` on average after `grace`, or the export stops and the
            // connection is closed.
            let lease = try workers.exportLease(exportPolicy)
            let body = HTTPStreamBody(endsOnShutdown: false) { writer in
                // The export runs on its own thread at the client's pace: a snapshot read of the
                // whole library must not hold one of the request workers for minutes.
                workers.run {
                    defer { lease.release() }
                    let started = ContinuousClock.now
                    var produced = 0
                    do {
                        _ = try facade.exportArchive { chunk throws in
                            guard writer.waitForCapacity(below: Self.exportWindow, until: exportPolicy.deadline(started, produced)),
                                  writer.write(chunk)
                            else {
                                throw ExportAborted()
                            }
                            produced += chunk.count
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
        routes.addForEachLibrary(.put, "/archive", options: options) { [libraries, spoolDirectory, imports] request, context in
            try RequestInput.requireJSON(request)
            let facade = try libraries.facade(context)
            guard imports.take(limit: Self.maximumConcurrentImports) else {
                throw HTTPError(.serviceUnavailable, detail: "Another archive import is running; retry when it is done.",
                                headers: ["Retry-After": "10"])
            }
            defer { imports.give() }
            let spool = try ArchiveSpool(directory: spoolDirectory)
            // Only a request with an Idempotency-Key needs the body's fingerprint (hashing a
            // large archive byte by byte is a measurable part of its upload).
            var fingerprint = request.headers["Idempotency-Key"] == nil ? nil : IdempotencyGuard.Fingerprint(request)
            // `requireJSON` refused an empty body, so a streamed route has its stream.
            guard let stream = request.bodyStream else { throw HTTPError(.badRequest, detail: "Send the archive as the request body.") }
            while true {
                let next: [UInt8]?
                do {
                    next = try stream.next()
                } catch {
                    // A body the server rejected (over the limit, badly framed) or that stalled:
                    // the server's answer (413, 400, 408), sent from here so that it has the
                    // request id and its log line. Otherwise the client is gone and this
                    // response is not sent.
                    throw stream.rejection ?? HTTPError(.badRequest, detail: "The archive did not arrive whole.")
                }
                guard let chunk = next else { break }
                try spool.write(chunk)
                fingerprint?.add(chunk)
            }
            return try idempotency.run(request, fingerprint: fingerprint?.value, context: context) {
                let summary: ArchiveImportSummary
                do {
                    summary = try spool.withMappedBytes { bytes, release in
                        try facade.importArchive(json: bytes, read: release)
                    }
                } catch LibraryError.conflict where access.grant(request).libraries != nil {
                    // The refusal names the library that holds an id: not to a key limited to
                    // others, which must learn nothing of them.
                    throw LibraryError.conflict(
                        "an album id of the archive is already used in a library this key may not see; album ids are unique "
                            + "across libraries, so remove it from the archive; nothing was changed")
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

/// Threads for long exports (archives and CSV lists), apart from the request workers, and the
/// slots that let one export per thread run at once.
struct ArchiveWorkers: Sendable {
    let pool: BoundedThreadPool
    /// The pool's thread count: exports that run at once.
    let threads: Int
    /// One per thread, shared by every route that exports.
    let slots: ExportSlots

    init(pool: BoundedThreadPool, threads: Int) {
        self.pool = pool
        self.threads = threads
        slots = ExportSlots(count: threads)
    }

    func run(_ work: @escaping @Sendable () -> Void) { pool.submit(work) }

    /// A free export slot, waiting as `policy` allows; 503 with `Retry-After` when none came free.
    func exportLease(_ policy: ExportPolicy) throws -> ExportSlots.Lease {
        guard let lease = slots.acquire(waitingAtMost: policy.queueDeadline, maxWaiting: policy.maxWaiting) else {
            let retry = max(1, Int(policy.queueDeadline.components.seconds))
            throw HTTPError(.serviceUnavailable, detail: "Every export slot is busy; retry the export in \(retry) s.",
                            type: "urn:bluelibrary:problem:exports-busy", title: "Exports busy",
                            headers: ["Retry-After": String(retry), "Cache-Control": "no-store"])
        }
        return lease
    }
}

/// How slow an export's client may be and how long an export request waits for its turn.
public struct ExportPolicy: Sendable {
    /// The average rate the client must accept, counted from the start of the export.
    public var minimumBytesPerSecond: Int
    /// Time the client gets before the rate counts (connection set-up, a first burst).
    public var grace: Duration
    /// How long a request waits for a free export slot before 503 + Retry-After.
    public var queueDeadline: Duration
    /// Requests waiting for a slot at most; more get 503 at once.
    public var maxWaiting: Int

    public init(minimumBytesPerSecond: Int = 256 * 1024, grace: Duration = .seconds(10),
                queueDeadline: Duration = .seconds(10), maxWaiting: Int = 8) {
        self.minimumBytesPerSecond = max(1, minimumBytesPerSecond)
        self.grace = grace
        self.queueDeadline = queueDeadline
        self.maxWaiting = max(0, maxWaiting)
    }

    /// When the client must have made room for more, given `produced` bytes so far: the
    /// bytes already handed over at the minimum rate, after the grace.
    func deadline(_ started: ContinuousClock.Instant, _ produced: Int) -> ContinuousClock.Instant {
        started + grace + .seconds(Double(produced) / Double(minimumBytesPerSecond))
    }
}

/// Export slots: one per export thread, handed out as leases.
final class ExportSlots: Sendable {
    private let free: DispatchSemaphore
    private let waiting = Atomic<Int>(0)

    init(count: Int) { free = DispatchSemaphore(value: max(1, count)) }

    /// A lease on a free slot, waiting at most `deadline` (and only if fewer than
    /// `maxWaiting` already wait); nil when none came free.
    func acquire(waitingAtMost deadline: Duration, maxWaiting: Int) -> Lease? {
        if free.wait(timeout: .now()) == .success { return Lease(free) }
        guard waiting.add(1, ordering: .relaxed).newValue <= maxWaiting else {
            waiting.subtract(1, ordering: .relaxed)
            return nil
        }
        defer { waiting.subtract(1, ordering: .relaxed) }
        return free.wait(timeout: .now(plus: deadline)) == .success ? Lease(free) : nil
    }

    /// A slot held until `release()` or, should the export never start (the client left
    /// before the response head went out), until the lease is dropped.
    final class Lease: Sendable {
        private let slots: DispatchSemaphore
        private let released = Atomic<Bool>(false)

        init(_ slots: DispatchSemaphore) { self.slots = slots }

        func release() {
            if !released.exchange(true, ordering: .acquiringAndReleasing) { slots.signal() }
        }

        deinit { release() }
    }
}
