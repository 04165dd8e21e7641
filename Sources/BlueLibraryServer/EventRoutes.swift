import HTTPServer

/// `GET /events`: the Server-Sent Events stream of library changes (see `EventHub`).
struct EventRoutes {
    let hub: EventHub

    func register(into routes: inout RouterBuilder) {
        routes.add(.get, "/events") { [hub] request, _ in
            // The header is what EventSource sends on reconnect; the query parameter is for
            // clients that cannot set headers on their first request.
            let lastEventID = request.headers["Last-Event-ID"] ?? request.query("lastEventId")
            let headers: HTTPHeaders = [
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            ]
            return HTTPResponse(status: .ok, headers: headers, body: .stream(HTTPStreamBody(endsOnShutdown: true) { writer in
                hub.subscribe(writer, lastEventID: lastEventID)
            }))
        }
    }
}
