import HTTPServer
import Library

/// `GET /events` and `GET /libraries/{lib}/events`: the Server-Sent Events stream of one
/// library's changes (see `EventHub`).
struct EventRoutes {
    let libraries: LibraryResolver
    let hubs: EventHubs

    func register(into routes: inout RouterBuilder) {
        routes.addForEachLibrary(.get, "/events", fast: subscribeKnown, blocking: subscribe)
    }

    /// The library's hub is made: subscribe on the event loop.
    func subscribeKnown(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse? {
        guard let facade = try libraries.loaded(context), let hub = hubs.existing(facade.library) else { return nil }
        return Self.stream(request, hub: hub)
    }

    /// Finds the library (a store read for one not used yet) and makes its hub.
    func subscribe(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let facade = try libraries.facade(context)
        let hub = try hubs.hub(facade.library) { try library { () throws(LibraryError) in try facade.currentVersion() } }
        return Self.stream(request, hub: hub)
    }

    static let headers: HTTPHeaders = [
        "Content-Type": "text/event-stream",
        "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",
    ]

    static func stream(_ request: HTTPRequest, hub: EventHub) -> HTTPResponse {
        // The header is what EventSource sends on reconnect; the query parameter is for
        // clients that cannot set headers on their first request.
        let lastEventID = request.headers["Last-Event-ID"] ?? request.query("lastEventId")
        return HTTPResponse(status: .ok, headers: headers, body: .stream(HTTPStreamBody(endsOnShutdown: true) { writer in
            hub.subscribe(writer, lastEventID: lastEventID)
        }))
    }
}
