import Covers
import Foundation
import HTTPServer
import Library
import Storage

/// The composition root: reads nothing global, builds every collaborator from the
/// configuration, wires the routes and middleware, and owns the HTTP server.
public final class BlueLibraryApp: Sendable {
    public let configuration: ServeConfiguration
    public let logger: JSONLogger
    let server: HTTPServer
    let state: ServiceState
    public let router: Router
    public let facade: LibraryFacade
    /// The request model's page cache (tests count its loads).
    let pageCache: AlbumListRoute.PageCache
    let store: SQLiteAlbumStore
    let exportWorkers: WorkerPool
    /// The `GET /events` hub: the facade's event sink (cover events can be forwarded to it).
    public let events: EventHub
    let covers: CoverService
    /// The live settings document (`GET/PATCH /settings`) and the passcode lock.
    public let settings: SettingsService
    let accessGuard: AccessGuard
    /// What `GET /metrics` renders.
    let metrics = Metrics()

    /// Opens storage and binds the port. Nothing is served before `start()`.
    public init(configuration: ServeConfiguration, logger: JSONLogger) throws {
        self.configuration = configuration
        self.logger = logger
        let state = ServiceState()
        self.state = state

        store = try Self.openStore(in: configuration.dataDirectory)
        let clock: @Sendable () -> Date = { Date() }
        events = EventHub(configuration: configuration.events, version: try Self.libraryVersion(store))
        facade = LibraryFacade(store: store, clock: clock, ids: .random(clock: clock), events: events,
                               changeRetention: configuration.changeRetention)
        if configuration.seed {
            do {
                if try facade.seedIfEmpty() { logger.log(.info, "seeded the library with the tutorial's five albums") }
            } catch {
                throw ConfigurationError("cannot seed the library in \(configuration.dataDirectory): \(error.message)")
            }
        }
        exportWorkers = WorkerPool(threads: 2, name: "archive-export")
        covers = try Self.openCovers(configuration, events: CoverEventForwarder(hub: events))
        let idempotency = IdempotencyGuard(store: store, clock: clock)
        let albums = AlbumRoutes(facade: facade, idempotency: idempotency, covers: covers)

        // The metrics middleware (outermost) is put in front once the routes are known.
        var middleware: [any HTTPMiddleware] = [RequestIDMiddleware(), ForwardedHeadersMiddleware(trustedProxies: configuration.trustedProxies)]
        if configuration.accessLog { middleware.append(AccessLogMiddleware(logger: logger)) }
        let pageCache = AlbumListRoute.PageCache()
        self.pageCache = pageCache
        (settings, accessGuard) = try Self.openAccess(
            store: store, facade: facade, events: events, configuration: configuration, logger: logger
        ) { [covers, logger] old, new in
            // Pages are cached by query; a changed default or maximum changes what a query means.
            if let old, old.paging != new.paging { pageCache.invalidate(erase: true) }
            if old?.covers != new.covers { Self.applyCoverSettings(new.covers, to: covers, configuration: configuration, logger: logger) }
        }
        middleware.append(AuthMiddleware(guardian: accessGuard, logger: logger))
        var routes = RouterBuilder(middleware: middleware, errorRenderer: Self.errorRenderer(logger: logger))
        SystemRoutes(state: state, spec: try SystemRoutes.loadSpec(), diskFull: { [store] in store.isDiskFull }).register(into: &routes)
        albums.register(into: &routes)
        AlbumListRoute(facade: facade, pages: pageCache, settings: settings).register(into: &routes)
        UndoStateRoutes(facade: facade).register(into: &routes)
        ArchiveRoutes(facade: facade, idempotency: idempotency, workers: ArchiveWorkers(pool: exportWorkers, threads: 2),
                      maxImportBytes: configuration.maxArchiveBytes, exportPolicy: configuration.exports).register(into: &routes)
        TutorialRoutes(facade: facade, albums: albums).register(into: &routes)
        CoverRoutes(facade: facade, covers: covers, wait: configuration.coverWait, coverURLs: RequestModelCache())
            .register(into: &routes)
        EventRoutes(hub: events).register(into: &routes)
        ChangeRoutes(facade: facade).register(into: &routes)
        SettingsRoutes(settings: settings, validate: Self.settingsRules(store: store)).register(into: &routes)
        MetricsRoutes(metrics: metrics).register(into: &routes)
        let httpMetrics = HTTPMetrics(routes: routes.routeTable)
        routes.middleware.insert(MetricsMiddleware(http: httpMetrics), at: 0)
        router = routes.build()

        server = try HTTPServer(
            configuration: .init(
                host: configuration.host, port: configuration.port, eventLoops: configuration.eventLoops,
                workerThreads: configuration.workers, limits: configuration.limits),
            router: router, errorRenderer: Self.errorRenderer(logger: logger), logger: logger.serverLogger)
        httpMetrics.register(with: metrics)
        ServiceMetrics.register(in: metrics, connections: { [server] in server.connectionCount }, events: events,
                                covers: covers, pages: pageCache, store: store)
    }

    /// The bound port (the real one when configured with port 0).
    public var port: Int { server.port }

    public func start() {
        server.start()
        logger.log(.info, "listening", [("host", .string(configuration.host)), ("port", .int(server.port)),
                                        ("dataDir", .string(configuration.dataDirectory)),
                                        ("version", .string(BlueLibraryVersion.current))], always: true)
    }

    /// Graceful stop: readiness fails at once, in-flight requests finish within the grace period.
    public func shutdown() {
        state.beginDraining()
        logger.log(.info, "draining", [("graceSeconds", .int(Int(configuration.shutdownGrace.components.seconds)))], always: true)
        events.shutdown()
        server.shutdown(grace: configuration.shutdownGrace)
        exportWorkers.shutdown()
        covers.shutdown()
        do {
            // A short WAL makes the next start fast (it is read in full when the database opens).
            try store.checkpointAndTruncateWAL()
        } catch {
            logger.log(.warning, "could not checkpoint the database on shutdown", [("error", .string(String(describing: error)))])
        }
    }

    /// The cover service: cache in `<data>/covers`, internal addresses refused but for the allow-list.
    static func openCovers(_ configuration: ServeConfiguration, events: any CoverEventSink) throws -> CoverService {
        let directory = URL(fileURLWithPath: configuration.dataDirectory).appendingPathComponent("covers").path
        do {
            var fetcher = CoverFetcherConfiguration()
            fetcher.addressPolicy = try CoverAddressPolicy(allowList: configuration.coverAllow)
            return try CoverService(configuration: CoverServiceConfiguration(
                cacheDirectory: directory, cacheSizeLimit: configuration.coverCacheBytes, fetcher: fetcher), events: events)
        } catch {
            throw ConfigurationError("cannot open the cover cache in \(directory): \(error)")
        }
    }

    /// Puts `covers.*` in force (at start and after every change):
    /// - `cacheSizeLimitBytes`: capped by `BLUELIBRARY_COVER_CACHE_BYTES` (the operator's disk
    ///   budget): the smaller of the two applies; lowering it trims the cache at once.
    /// - `fetchTimeoutSeconds` (the whole fetch) and `freshnessSeconds`: as stored.
    /// - `allowList`: joined with `BLUELIBRARY_COVER_ALLOW` (the union is allowed; the settings
    ///   cannot close what the environment opened).
    static func applyCoverSettings(_ settings: LibrarySettings.Covers, to covers: CoverService,
                                   configuration: ServeConfiguration, logger: JSONLogger) {
        let environment = configuration.coverAllow.split(separator: ",").map(String.init)
        var policy: CoverAddressPolicy
        do {
            policy = try CoverAddressPolicy(allowing: environment + settings.allowList)
        } catch {
            // Entries are validated by PATCH /settings; an older stored one the guard refuses is skipped.
            logger.log(.error, "covers.allowList not applied", [("error", .string(error.description))])
            policy = (try? CoverAddressPolicy(allowing: environment)) ?? CoverAddressPolicy()
        }
        covers.update(
            cacheSizeLimit: min(configuration.coverCacheBytes, settings.cacheSizeLimitBytes),
            fetchTimeout: .seconds(settings.fetchTimeoutSeconds), freshness: .seconds(settings.freshnessSeconds),
            addressPolicy: policy)
    }

    /// The library's version at start: where the event hub's `Last-Event-ID` window begins.
    static func libraryVersion(_ store: SQLiteAlbumStore) throws -> Int64 {
        do {
            return try store.read(.default) { try $0.version() }
        } catch {
            throw ConfigurationError("cannot read the library version from \(store.path): \(error)")
        }
    }

    /// The SQLite database in the data directory (created if missing).
    static func openStore(in directory: String) throws -> SQLiteAlbumStore {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw ConfigurationError("cannot create the data directory \(directory): \(error.localizedDescription)")
        }
        let path = URL(fileURLWithPath: directory).appendingPathComponent("bluelibrary.sqlite").path
        do {
            return try SQLiteAlbumStore(path: path)
        } catch {
            throw ConfigurationError("cannot open the database \(path): \(error)")
        }
    }

    public func waitUntilStopped() { server.waitUntilStopped() }

    /// A 500 never shows internals to the client; the log line has them, with the request id.
    static func errorRenderer(logger: JSONLogger) -> ErrorRenderer {
        ErrorRenderer { error, request, context in
            if let failure = error as? StorageFailure, failure.isDiskFull {
                logger.log(.error, "disk full: write refused with 507", [("error", .string(String(describing: failure))), ("requestId", .string(context.requestID)),
                                                                         ("method", .string(request.method.rawValue)), ("path", .string(String(request.path)))])
                return StorageFailure.diskFullError.response()
            }
            logger.log(.error, "unhandled error", [("error", .string(String(describing: error))), ("requestId", .string(context.requestID)),
                                                   ("method", .string(request.method.rawValue)), ("path", .string(String(request.path)))])
            return HTTPError(.internalServerError,
                             detail: "The server failed to answer this request. Quote request id \(context.requestID) when reporting it.")
                .response()
        }
    }
}
