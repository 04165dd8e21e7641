import HTTPServer
import Library

/// `GET /events` and `GET /libraries/{lib}/events`: the Server-Sent Events stream of one
/// library's changes (see `EventHub`); `GET /events?library=a&library=b`: one stream over
/// several libraries (see `MultiLibraryEventStream` for its ids and data).
struct EventRoutes {
    let libraries: LibraryResolver
    let hubs: EventHubs
    /// On a shared database: the follower that publishes the change feed to the hubs.
    let follower: ChangeFollower?
    /// The most changes a `Last-Event-ID` older than a hub's window is filled with from the
    /// change feed (a longer gap starts with `library.outdated`).
    static let maxBackfill = 10_000

    func register(into routes: inout RouterBuilder) {
        routes.addForEachLibrary(.get, "/events", fast: subscribeKnown, blocking: subscribe)
    }

    /// Every library's hub is made: subscribe on the event loop.
    func subscribeKnown(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse? {
        let named = try Self.namedLibraries(request, context)
        guard !named.isEmpty else {
            guard let facade = try libraries.loaded(context), let hub = hubs.existing(facade.library),
                  !hub.needsBackfill(lastEventID: Self.lastEventID(request))
            else { return nil }
            return Self.stream(request, hub: hub)
        }
        let vector = Self.lastEventID(request).map(MultiLibraryEventStream.parse) ?? [:]
        var found: [(LibraryID, EventHub)] = []
        for id in named {
            guard libraries.libraries.loadedFacade(id) != nil, let hub = hubs.existing(id),
                  !(vector[id].map { hub.needsBackfill(after: $0) } ?? false)
            else { return nil }
            found.append((id, hub))
        }
        return Self.stream(request, hubs: found)
    }

    /// Finds the libraries (a store read for one not used yet) and makes their hubs.
    func subscribe(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let named = try Self.namedLibraries(request, context)
        guard !named.isEmpty else {
            let facade = try libraries.facade(context)
            let hub = try hub(facade)
            guard case let .after(seen) = EventHub.Resume(lastEventID: Self.lastEventID(request)) else {
                return Self.stream(request, hub: hub)
            }
            return Self.stream(request, hub: hub, backfill: backfill(after: seen, facade: facade, hub: hub))
        }
        let vector = Self.lastEventID(request).map(MultiLibraryEventStream.parse) ?? [:]
        var backfills: [LibraryID: EventHub.Backfill] = [:]
        var found: [(LibraryID, EventHub)] = []
        for id in named {
            let facade: LibraryFacade
            do throws(LibraryError) {
                facade = try libraries.libraries.facade(id)
            } catch {
                // A library named in the query that does not exist: a bad value, 422.
                throw error.inContext(field: "library")
            }
            let hub = try hub(facade)
            if let seen = vector[id] { backfills[id] = backfill(after: seen, facade: facade, hub: hub) }
            found.append((id, hub))
        }
        return Self.stream(request, hubs: found, backfills: backfills)
    }

    /// What a resume from further back than `hub` keeps needs from the change feed: first the
    /// hub is brought up to the database (another instance may have committed what the client
    /// saw), then the feed's changes after the client's id are read (nil when the feed no
    /// longer has them all, or none are needed: the hub decides with what it has).
    ///
    /// An id still newer than the library after the catch-up (`LibraryError.versionAhead` for
    /// the change feed) reads nothing: where `GET /changes` answers 400, the stream starts with
    /// `library.outdated` quoting the id. An `EventSource` cannot read an error status and
    /// stops reconnecting on one, and a client holding a version this library never gave out
    /// has another library's state, so reloading is what it must do.
    private func backfill(after seen: Int64, facade: LibraryFacade, hub: EventHub) -> EventHub.Backfill? {
        guard hub.needsBackfill(after: seen) else { return nil }
        if seen > hub.window.latest, let follower { follower.catchUp(facade.library, hub: hub, waiting: true) }
        guard seen < hub.window.evictedThrough,
              let page = try? facade.changes(since: seen, limit: Self.maxBackfill)
        else { return nil }
        return EventHub.Backfill(after: seen, events: page.changes.compactMap(LibraryEvent.init))
    }

    private func hub(_ facade: LibraryFacade) throws -> EventHub {
        try hubs.hub(facade.library) { try facade.currentVersion() }
    }

    /// The `library` query parameters of `/events`, deduplicated in order (none: one library,
    /// the route's).
    /// - Throws: 400 for a bad id, too many, or `library` on a `/libraries/{lib}/events` route.
    static func namedLibraries(_ request: HTTPRequest, _ context: RequestContext) throws -> [LibraryID] {
        let texts = QueryParameters(request).texts("library")
        guard !texts.isEmpty else { return [] }
        if context.parameters["lib"] != nil {
            throw QueryParameters.invalid("library", "library query parameters are for /events only; use /events?library=a&library=b.")
        }
        var ids: [LibraryID] = []
        for text in texts {
            let id: LibraryID
            do {
                id = try LibraryID(validating: text, field: "library")
            } catch {
                throw QueryParameters.invalid("library", "library=\(text.prefix(60)) is not a library id: \(error.message).")
            }
            if !ids.contains(id) { ids.append(id) }
        }
        guard ids.count <= MultiLibraryEventStream.maxLibraries else {
            throw QueryParameters.invalid("library", "library: one stream takes at most \(MultiLibraryEventStream.maxLibraries) libraries (got \(ids.count)); open several.")
        }
        return ids
    }

    static let headers: HTTPHeaders = [
        "Content-Type": "text/event-stream",
        "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",
    ]

    /// The header is what EventSource sends on reconnect; the query parameter is for clients
    /// that cannot set headers on their first request. An empty (or blank) id is no id: the
    /// stream starts live, as for a client that never had one.
    static func lastEventID(_ request: HTTPRequest) -> String? {
        let given = [request.headers["Last-Event-ID"], QueryParameters(request).text("lastEventId")]
        return given.lazy.compactMap { $0 }.first { !$0.trimmingASCIIWhitespace().isEmpty }
    }

    static func stream(_ request: HTTPRequest, hub: EventHub, backfill: EventHub.Backfill? = nil) -> HTTPResponse {
        let lastEventID = lastEventID(request)
        return HTTPResponse(status: .ok, headers: headers, body: .stream(HTTPStreamBody(endsOnShutdown: true, boundsUnsentBytes: true) { writer in
            hub.subscribe(writer, lastEventID: lastEventID, backfill: backfill)
        }))
    }

    static func stream(_ request: HTTPRequest, hubs: [(LibraryID, EventHub)], backfills: [LibraryID: EventHub.Backfill] = [:])
        -> HTTPResponse
    {
        let lastEventID = lastEventID(request)
        return HTTPResponse(status: .ok, headers: headers, body: .stream(HTTPStreamBody(endsOnShutdown: true, boundsUnsentBytes: true) { writer in
            MultiLibraryEventStream(writer: writer, libraries: hubs.map(\.0))
                .start(hubs: hubs, lastEventID: lastEventID, backfills: backfills)
        }))
    }
}
