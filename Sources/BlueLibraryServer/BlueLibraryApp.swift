import Covers
import Crypto
import Essentials
import Foundation
import HTTPServer
import Library
import Storage

/// The composition root: reads nothing global, builds every collaborator from the
/// configuration, wires the routes and middleware, and owns the HTTP server.
public final class BlueLibraryApp: Sendable {
    /// The web app's files, read from the bundle and gzipped once per process: every app a
    /// process makes (the tests make many) serves the same bytes.
    private static let bundledApp = Result { try StaticResources(bundleDirectory: "app") }
    /// The API reference generated from openapi.yaml (scripts/openapi-docs.py): a page and its
    /// style sheet, no script; likewise once per process.
    private static let bundledDocs = Result { try StaticResources(bundleDirectory: "docs", contentSecurityPolicy: StaticResources.docsPolicy) }

    public let configuration: ServeConfiguration
    public let logger: JSONLogger
    let server: HTTPServer
    let state: ServiceState
    public let router: Router
    /// How a thrown error becomes a response (the server's, and ``answerInProcess(_:)``'s).
    let errorRenderer: ErrorRenderer
    /// Every library, each behind its own facade.
    public let libraries: Libraries
    /// The facade of the library `default` (the routes without a `/libraries/{lib}` prefix).
    public var facade: LibraryFacade { libraries.defaultLibrary }
    /// The request model's page cache (tests count its loads).
    let pageCache: AlbumListRoute.PageCache
    /// The request model's view pages (tests count their loads).
    let viewPages: ViewPages
    /// List bodies rendered (`bluelibrary_list_bodies_rendered_total`).
    let pageRenders = PageRenders()
    /// The database (SQLite file, or PostgreSQL shared with other instances).
    let backend: any StoreBackend
    let exportWorkers: BoundedThreadPool
    /// One event hub per library (each facade's event sink).
    let eventHubs: EventHubs
    /// The `GET /events` hub of `default` (cover and settings events go to it too).
    public var events: EventHub { eventHubs.defaultHub }
    let covers: CoverService
    /// The live settings document (`GET/PATCH /settings`) and the passcode lock.
    public let settings: SettingsService
    let accessGuard: AccessGuard
    /// Re-reads the settings when another process changed the database.
    let storedStateWatcher: StoredStateWatcher
    /// Remakes the libraries' artist sort keys when the ignored articles change.
    let sortKeyRebuild: SortKeyRebuild
    /// On a shared database: publishes every instance's commits from the change feed.
    let changeFollower: ChangeFollower?
    /// Everything that runs in the background, started in this order and stopped in reverse.
    let services: ServiceGroup
    /// What `GET /metrics` renders.
    let metrics = Metrics()
    /// Reads stopped by their time limit or their client leaving (see `QueryLimitMiddleware`).
    let queryInterruptions = QueryInterruptionCounters()

    /// Opens storage and binds the port. Nothing is served before `start()`.
    public convenience init(configuration: ServeConfiguration, logger: JSONLogger) throws {
        try self.init(configuration: configuration, logger: logger, backend: Self.openBackend(configuration))
    }

    /// The app on `backend` (the database `configuration` names, or a test's store), with the
    /// covers fetched by `coverFetcher` (nil: libcurl, as configured) and ages kept in memory
    /// (request models, cover freshness) on `monotonic`. Binds the port; nothing is served
    /// before `start()`.
    init(
        configuration: ServeConfiguration, logger: JSONLogger, backend: any StoreBackend,
        coverFetcher: (any CoverFetching)? = nil, monotonic: any MonotonicClock = SystemClock()
    ) throws {
        self.configuration = configuration
        self.logger = logger
        let state = ServiceState()
        self.state = state

        self.backend = backend
        let store = backend.albums
        let clock: @Sendable () -> Date = { Date() }
        let eventHubs = EventHubs(
            configuration: configuration.events, defaultVersion: try Self.libraryVersion(backend), threads: configuration.eventThreads,
            idleTimeout: configuration.eventHubIdle, clock: configuration.eventHubClock)
        self.eventHubs = eventHubs
        // On a shared database the change feed is where events come from (every instance's
        // commits, in version order, with the same ids); the facades then publish only what
        // the feed does not carry, and wake the follower for their own commits.
        let changeFollower = backend.isShared
            ? ChangeFollower(store: store, hubs: eventHubs, wakeup: backend.makeCommitWakeup(), relay: backend.makeEventRelay(), logger: logger,
                             clock: monotonic)
            : nil
        self.changeFollower = changeFollower
        let libraries = Libraries(store: store, clock: clock, ids: .random(clock: clock),
                                  changeRetention: configuration.changeRetention) { library in
            changeFollower.map { $0.sink(library) } ?? eventHubs.sink(library)
        }
        self.libraries = libraries
        let facade = libraries.defaultLibrary
        let events = eventHubs.defaultHub
        let resolver = LibraryResolver(libraries: libraries)
        if configuration.seed {
            do {
                if try facade.seedIfEmpty() { logger.log(.info, "seeded the library with the tutorial's five albums") }
            } catch {
                throw ConfigurationError("cannot seed the library in \(backend.location): \(error.message)")
            }
        }
        // Known from here on without a read: every commit gives the new version (on a shared
        // store this is one read, and every request reads again).
        _ = try? facade.currentVersion()
        exportWorkers = BoundedThreadPool(threads: 2, name: "archive-export", stackSize: 1 << 20)
        covers = try Self.openCovers(configuration, events: CoverEventForwarder(hub: events), clock: monotonic, fetcher: coverFetcher)
        let idempotency = IdempotencyGuard(store: backend.records, clock: clock)

        // The metrics middleware (outermost) is put in front once the routes are known.
        let forwarded = ForwardedHeadersMiddleware(
            trustedProxies: configuration.trustedProxies, family: configuration.forwardedHeaders, logger: logger)
        var middleware: [any HTTPMiddleware] = [RequestIDMiddleware(), forwarded]
        if configuration.accessLog { middleware.append(AccessLogMiddleware(logger: logger)) }
        // Before the access check: a preflight never carries the token.
        let cors = configuration.corsOrigins.isEmpty ? nil : CORSMiddleware(origins: configuration.corsOrigins)
        if let cors { middleware.append(cors) }
        let pageCache = AlbumListRoute.PageCache(clock: monotonic)
        self.pageCache = pageCache
        let viewPages = ViewPages(clock: monotonic)
        self.viewPages = viewPages
        (settings, accessGuard) = try Self.openAccess(
            backend: backend, libraries: libraries, events: events, configuration: configuration, logger: logger
        ) { [covers, logger] old, new in
            // Pages are cached by query; a changed default or maximum changes what a query means.
            if let old, old.paging != new.paging {
                pageCache.invalidate(erase: true)
                viewPages.cache.invalidate(erase: true)
            }
            if old?.covers != new.covers { Self.applyCoverSettings(new.covers, to: covers, configuration: configuration, logger: logger) }
        }
        let sortKeyRebuild = SortKeyRebuild(
            libraries: libraries, articles: { [settings] in settings.current.sorting.articles }, logger: logger)
        self.sortKeyRebuild = sortKeyRebuild
        // Weakly: the rebuild reads the settings, which hold their observers.
        settings.observe { [weak sortKeyRebuild] old, new in
            if old.sorting != new.sorting { sortKeyRebuild?.wake() }
        }
        let accessControl = AccessControl(guardian: accessGuard, libraries: libraries, logger: logger)
        middleware.append(AuthMiddleware(control: accessControl))
        let albums = AlbumRoutes(
            libraries: resolver, idempotency: idempotency, covers: covers,
            albums: RequestModelCache(limits: AlbumRoutes.cacheLimits, clock: monotonic), access: accessControl)
        middleware.append(QueryLimitMiddleware(timeLimit: configuration.queryTimeout, counters: queryInterruptions))
        if backend.replicaStatus != nil { middleware.append(ReadPositionMiddleware()) }
        do {
            storedStateWatcher = StoredStateWatcher(
                signal: try backend.makeStoredStateSignal(), interval: configuration.accessPollInterval, clock: monotonic, logger: logger
            ) { [settings, accessGuard] in
                try accessGuard.reloadKeys()
                try accessGuard.reloadFailures()
                try settings.reload()
            }
        } catch {
            throw ConfigurationError("cannot watch the database \(backend.location): \(error)")
        }
        let errorRenderer = Self.errorRenderer(logger: logger, isDiskFull: { [backend] in backend.isDiskFull($0) })
        self.errorRenderer = errorRenderer
        var routes = RouterBuilder(middleware: middleware, errorRenderer: errorRenderer)
        // The read lane of the routes marked `.expensiveRead` (uncached list reads).
        routes.readLimits = ReadAdmission.Limits(
            threads: configuration.defaultReadWorkers, queue: configuration.readQueue, perClient: configuration.maxReadsPerClient,
            nice: configuration.readNice)
        SystemRoutes(state: state, spec: try SystemRoutes.loadSpec(), diskFull: { [backend] in backend.isDiskFull }, ping: backend.ping,
                     replicas: backend.replicaStatus)
            .register(into: &routes)
        // The web app and the API reference, read and gzipped once per process (a missing or
        // broken bundle stops the start).
        try Self.bundledApp.get().register(at: "/app", into: &routes)
        try Self.bundledDocs.get().register(at: "/docs", into: &routes)
        albums.register(into: &routes)
        BatchRoutes(libraries: resolver, idempotency: idempotency, covers: covers, access: accessControl).register(into: &routes)
        AlbumImportRoute(libraries: resolver, idempotency: idempotency).register(into: &routes)
        LibraryRoutes(
            libraries: resolver, idempotency: idempotency, hubs: eventHubs, sortArticles: { [settings] in settings.current.sorting.articles },
            access: accessControl
        ).register(into: &routes)
        let seal = try Self.cursorSeal(backend)
        let exports = ArchiveWorkers(pool: exportWorkers, threads: 2)
        let csvExport = CSVExport(workers: exports, policy: configuration.exports)
        AlbumListRoute(libraries: resolver, pages: pageCache, settings: settings, seal: seal, renders: pageRenders, csv: csvExport)
            .register(into: &routes)
        ViewRoutes(libraries: libraries, idempotency: idempotency, covers: covers, pages: viewPages, access: accessControl)
            .register(into: &routes)
        ViewListRoute(libraries: libraries, pages: viewPages, settings: settings, seal: seal, renders: pageRenders, csv: csvExport).register(into: &routes)
        UndoStateRoutes(libraries: resolver, access: accessControl).register(into: &routes)
        ArchiveRoutes(libraries: resolver, idempotency: idempotency, workers: exports,
                      maxImportBytes: configuration.maxArchiveBytes, access: accessControl, spoolDirectory: configuration.dataDirectory,
                      exportPolicy: configuration.exports).register(into: &routes)
        TutorialRoutes(facade: facade, albums: albums).register(into: &routes)
        CoverRoutes(libraries: resolver, covers: covers, variants: covers, wait: configuration.coverWait, coverURLs: RequestModelCache(clock: monotonic))
            .register(into: &routes)
        EventRoutes(libraries: resolver, hubs: eventHubs, follower: changeFollower).register(into: &routes)
        ChangeRoutes(libraries: resolver).register(into: &routes)
        SettingsRoutes(settings: settings, validate: Self.settingsRules(guardian: accessGuard, configuration: configuration)).register(into: &routes)
        KeyRoutes(control: accessControl, clock: configuration.accessClock).register(into: &routes)
        MetricsRoutes(metrics: metrics).register(into: &routes)
        let httpMetrics = HTTPMetrics(routes: routes.routeTable)
        routes.middleware.insert(MetricsMiddleware(http: httpMetrics), at: 0)
        router = routes.build()

        server = try HTTPServer(
            configuration: .init(
                host: configuration.host, port: configuration.port, eventLoops: configuration.eventLoops,
                workerThreads: configuration.workers, workerQueueLimit: configuration.workerQueue, limits: configuration.limits,
                clock: monotonic),
            router: router, errorRenderer: errorRenderer, logger: logger.serverLogger,
            headCheck: AuthMiddleware.headCheck(control: accessControl, forwarded: forwarded, cors: cors))
        httpMetrics.register(with: metrics)
        // Weakly: the server holds the router, and with it these metrics.
        ServiceMetrics.register(in: metrics, connections: { [weak server] in server?.connectionCount ?? 0 }, events: eventHubs,
                                covers: covers, pages: pageCache, droppedStreams: { [weak server] in server?.droppedStreamCount ?? 0 })
        ServiceMetrics.register(in: metrics, server: server, reads: router.readAdmission)
        backend.register(in: metrics)
        viewPages.register(in: metrics)
        metrics.register(
            "bluelibrary_key_requests_total",
            help: "Requests let in with each API key, by its public id (never a secret), since start.", kind: .counter
        ) { [accessGuard] writer in
            for (id, count) in accessGuard.keyUses.sorted(by: { $0.key < $1.key }) { writer.sample("", [("key", id)], count) }
        }
        metrics.sampled("bluelibrary_queries_timed_out_total",
                        help: "Read requests whose database work was stopped at the query time limit (answered 503 query-too-expensive).",
                        kind: .counter) { [queryInterruptions] in queryInterruptions.timedOut }
        metrics.sampled("bluelibrary_queries_cancelled_total",
                        help: "Read requests whose database work was stopped because the client closed the connection (logged as 499).",
                        kind: .counter) { [queryInterruptions] in queryInterruptions.cancelled }
        pageRenders.register(in: metrics)
        Self.registerCountMetrics(libraries.counts, in: metrics)

        // Each service may use those before it while it runs, and stops before them: the event
        // streams end (follower, then hubs) before the server drains, so no open stream holds
        // the drain; the server drains before the state watcher, the pools and the database
        // it uses go. What lives from construction (the database, the pools, the hubs, the
        // listening socket) is closed on shutdown even when the app never started.
        let server = server
        let grace = configuration.shutdownGrace
        let hashing = accessGuard.hashing
        services = ServiceGroup([
            ClosureService("database", stopsWithoutStart: true) { [logger] in backend.close(logger: logger) },
            ClosureService("covers", stopsWithoutStart: true, stop: covers.shutdown),
            ClosureService("password-hashing", stopsWithoutStart: true) { hashing.shutdown() },
            ClosureService("archive-export", stopsWithoutStart: true) { [exportWorkers] in exportWorkers.shutdown() },
            storedStateWatcher,
            sortKeyRebuild,
            ClosureService("http", stopsWithoutStart: true, start: server.start) { server.shutdown(grace: grace) },
            ClosureService("event-hubs", stopsWithoutStart: true, stop: eventHubs.shutdown),
        ] + (changeFollower.map { [$0] } ?? []))
    }

    /// `bluelibrary_filter_counts_{computed_total,hits_total,entries}`: the `count=true` totals
    /// (see `FilterCounts`).
    static func registerCountMetrics(_ counts: FilterCounts, in metrics: Metrics) {
        metrics.sampled("bluelibrary_filter_counts_computed_total",
                        help: "Filter counts (count=true totals, filtered offsets) computed from the database, one per library, version and filter.",
                        kind: .counter) { counts.computed }
        metrics.sampled("bluelibrary_filter_counts_hits_total",
                        help: "Filter counts answered from memory (another page of the same filter at the same library version).",
                        kind: .counter) { counts.statistics.hits }
        metrics.sampled("bluelibrary_filter_counts_entries", help: "Filter counts held in memory.") { counts.usage.entries }
    }

    /// The bound port (the real one when configured with port 0).
    public var port: Int { server.port }

    public func start() {
        do {
            try services.start()
        } catch {
            logger.log(.error, "could not start", [("error", .string(String(describing: error)))], always: true)
            return
        }
        logger.log(.info, "listening", [("host", .string(configuration.host)), ("port", .int(server.port)),
                                        ("dataDir", .string(configuration.dataDirectory)), ("database", .string(backend.location)),
                                        ("version", .string(BlueLibraryVersion.current))], always: true)
        if let warning = Self.exposureWarning(host: configuration.host, hasToken: accessGuard.hasAdminKey,
                                              passcodeEnabled: accessGuard.settings.passcodeEnabled) {
            logger.log(.warning, warning, [("host", .string(configuration.host))], always: true)
        }
        for warning in configuration.warnings { logger.log(.warning, warning, always: true) }
    }

    /// What start-up says when the server listens beyond loopback while anyone may write: no
    /// token set, or a token stored with write protection turned off (`access.passcodeEnabled`
    /// false, which is what every request is checked against). Nil when it is fine.
    static func exposureWarning(host: String, hasToken: Bool, passcodeEnabled: Bool) -> String? {
        let loopback = ["127.0.0.0/8", "::1/128", "::ffff:127.0.0.0/104"].compactMap(IPAddressRange.init)
        guard !(hasToken && passcodeEnabled), let address = IPAddress(host), !loopback.contains(where: { $0.contains(address) })
        else { return nil }
        if hasToken {
            return "listening on \(host) with a token stored but write protection is off (access.passcodeEnabled is false): "
                + "anyone who can reach this port may change the library, its settings and the cover allow-list. Turn it on "
                + "(PATCH /settings {\"access\": {\"passcodeEnabled\": true}}, or start with BLUELIBRARY_TOKEN), "
                + "or listen on 127.0.0.1 behind a proxy"
        }
        return "listening on \(host) without a token: anyone who can reach this port may change the library, "
            + "its settings and the cover allow-list. Set one (printf %s \"$TOKEN\" | bluelibrary token set, or BLUELIBRARY_TOKEN), "
            + "or listen on 127.0.0.1 behind a proxy"
    }

    /// Graceful stop: readiness fails at once, in-flight requests finish within the grace period.
    public func shutdown() {
        state.beginDraining()
        logger.log(.info, "draining", [("graceSeconds", .int(Int(configuration.shutdownGrace.components.seconds)))], always: true)
        services.stop()
    }

    /// The cover service: cache in `<data>/covers`, internal addresses refused but for the allow-list.
    static func openCovers(
        _ configuration: ServeConfiguration, events: any CoverEventSink, clock: any MonotonicClock,
        fetcher upstream: (any CoverFetching)? = nil
    ) throws -> CoverService {
        let directory = URL(fileURLWithPath: configuration.dataDirectory).appendingPathComponent("covers").path
        do {
            var fetcher = CoverFetcherConfiguration()
            fetcher.addressPolicy = try CoverAddressPolicy(allowList: configuration.coverAllow)
            var covers = CoverServiceConfiguration(
                cacheDirectory: directory, cacheSizeLimit: configuration.coverCacheBytes, fetcher: fetcher)
            covers.thumbnailer.maxPixels = configuration.coverMaxPixels
            return try CoverService(configuration: covers, fetcher: upstream, events: events, clock: clock)
        } catch {
            throw ConfigurationError("cannot open the cover cache in \(directory): \(error)")
        }
    }

    /// Puts `covers.*` in force (at start and after every change):
    /// - `cacheSizeLimitBytes`: capped by `BLUELIBRARY_COVER_CACHE_BYTES` (the operator's disk
    ///   budget): the smaller of the two applies; lowering it trims the cache at once.
    /// - `fetchTimeoutSeconds` (the whole fetch) and `freshnessSeconds`: as stored.
    /// - `allowList`: may only narrow `BLUELIBRARY_COVER_ALLOW` (an empty list leaves it as it
    ///   is; otherwise only what both open is open), so an anonymous `PATCH /settings` on an
    ///   unlocked server cannot open loopback or cloud metadata. With
    ///   `BLUELIBRARY_COVER_ALLOW_FROM_SETTINGS=on` the operator lets the settings open more (the
    ///   union is allowed).
    static func applyCoverSettings(_ settings: LibrarySettings.Covers, to covers: CoverService,
                                   configuration: ServeConfiguration, logger: JSONLogger) {
        covers.update(
            cacheSizeLimit: min(configuration.coverCacheBytes, settings.cacheSizeLimitBytes),
            fetchTimeout: .seconds(settings.fetchTimeoutSeconds), freshness: .seconds(settings.freshnessSeconds),
            addressPolicy: coverAddressPolicy(settings.allowList, configuration: configuration, logger: logger))
    }

    /// The address guard in force for the `covers.allowList` setting `entries` (see
    /// ``applyCoverSettings(_:to:configuration:logger:)``).
    static func coverAddressPolicy(_ entries: [String], configuration: ServeConfiguration, logger: JSONLogger) -> CoverAddressPolicy {
        let environment = (try? CoverAddressPolicy(allowList: configuration.coverAllow)) ?? CoverAddressPolicy()
        guard !entries.isEmpty else { return environment }
        do {
            if configuration.coverAllowFromSettings {
                return try CoverAddressPolicy(allowing: configuration.coverAllow.split(separator: ",").map(String.init) + entries)
            }
            let requested = try CoverAddressPolicy(allowing: entries)
            let outside = entries.filter { (try? environment.opens(entry: $0)) != true }
            if !outside.isEmpty {
                // Stored before this rule, or the environment changed since: only the overlap applies.
                logger.log(.warning, "covers.allowList entries outside BLUELIBRARY_COVER_ALLOW do not open anything",
                           [("entries", .string(outside.joined(separator: ",")))])
            }
            return environment.narrowed(to: requested)
        } catch {
            // Entries are validated by PATCH /settings; an older stored one the guard refuses closes all.
            logger.log(.error, "covers.allowList not applied", [("error", .string(error.description))])
            return configuration.coverAllowFromSettings ? environment : CoverAddressPolicy()
        }
    }

    /// HMAC-SHA256 under the database's cursor key (made on first start): cursors survive a
    /// restart, every instance on this database accepts them, and nobody can forge one.
    static func cursorSeal(_ backend: any StoreBackend) throws -> CursorSeal {
        let key: [UInt8]
        do {
            key = try backend.records.secret(named: "cursor", orStore: HMACSHA256.makeKey())
        } catch {
            throw ConfigurationError("cannot read or create the cursor key in \(backend.location): \(error)")
        }
        return CursorSeal(tagLength: HMACSHA256.tagLength) { message in
            // HMAC fails only if libcrypto cannot allocate; an empty tag then never verifies.
            (try? HMACSHA256.tag(message, key: key)) ?? []
        }
    }

    /// The library's version at start: where the event hub's `Last-Event-ID` window begins.
    static func libraryVersion(_ backend: any StoreBackend) throws -> Int64 {
        do {
            return try backend.albums.read(.default) { try $0.version() }
        } catch {
            throw ConfigurationError("cannot read the library version from \(backend.location): \(error)")
        }
    }

    /// The database `configuration` names: PostgreSQL for a `--database-url`, else the SQLite
    /// file in the data directory (created if missing).
    static func openBackend(_ configuration: ServeConfiguration) throws -> any StoreBackend {
        if let url = configuration.databaseURL {
            var replicas = PostgresReplicas.Configuration()
            replicas.maxLag = configuration.replicaMaxLag
            replicas.wait = configuration.replicaWait
            return try PostgresBackend(url: url, password: configuration.databasePassword, poolSize: configuration.databasePoolSize,
                                       readURLs: configuration.databaseReadURLs, replicas: replicas)
        }
        return try SQLiteBackend(directory: configuration.dataDirectory, storage: configuration.sqliteStorage)
    }

    /// The SQLite database in the data directory (created if missing).
    static func openStore(
        in directory: String, storage: SQLiteAlbumStore.Configuration = ServeConfiguration().sqliteStorage
    ) throws -> SQLiteAlbumStore {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw ConfigurationError("cannot create the data directory \(directory): \(error.localizedDescription)")
        }
        let path = URL(fileURLWithPath: directory).appendingPathComponent("bluelibrary.sqlite").path
        do {
            return try SQLiteAlbumStore(path: path, configuration: storage)
        } catch {
            throw ConfigurationError("cannot open the database \(path): \(error)")
        }
    }

    public func waitUntilStopped() { server.waitUntilStopped() }

    /// `request` answered by the app's routes in this process, from loopback, without a socket
    /// (``Router/answerInProcess(_:peer:errorRenderer:)`` says what a connection would add).
    /// For route tests; the app need not be started.
    public func answerInProcess(_ request: HTTPRequest) -> HTTPResponse {
        router.answerInProcess(request, peer: .loopback, errorRenderer: errorRenderer)
    }

    /// A 500 never shows internals to the client; the log line has them, with the request id.
    /// A database that cannot be reached (or a full pool) is 503 with `Retry-After`, whatever
    /// the request was doing (`DependencyUnavailable`); a full disk 507.
    static func errorRenderer(logger: JSONLogger, isDiskFull: @escaping @Sendable (any Error) -> Bool) -> ErrorRenderer {
        ErrorRenderer(busy: ServerBusyProblem.error) { error, request, context in
            if let interrupted = QueryLimit.cause(of: error) {
                if case .timeLimit = interrupted.reason {
                    logger.log(.info, "read stopped at the query time limit: answered 503", [
                        ("requestId", .string(context.requestID)), ("method", .string(request.method.rawValue)),
                        ("path", .string(String(request.path)))])
                }
                return QueryLimit.error(interrupted).response()
            }
            if let dependency = DependencyUnavailable.cause(of: error) {
                logger.log(.warning, "database unavailable: answered 503", [("error", .string(String(describing: error))), ("requestId", .string(context.requestID)),
                                                                            ("method", .string(request.method.rawValue)), ("path", .string(String(request.path)))])
                return DependencyUnavailable.error(dependency).response()
            }
            if let failure = error as? LibraryError, case let .storage(underlying) = failure, isDiskFull(underlying.error) {
                logger.log(.error, "disk full: write refused with 507", [("error", .string(LibraryError.logDescription(of: failure))),
                                                                         ("requestId", .string(context.requestID)),
                                                                         ("method", .string(request.method.rawValue)), ("path", .string(String(request.path)))])
                return LibraryError.diskFullProblem.response()
            }
            logger.log(.error, "unhandled error", [("error", .string(LibraryError.logDescription(of: error))), ("requestId", .string(context.requestID)),
                                                   ("method", .string(request.method.rawValue)), ("path", .string(String(request.path)))])
            return HTTPError(.internalServerError,
                             detail: "The server failed to answer this request. Quote request id \(context.requestID) when reporting it.")
                .response()
        }
    }
}
