import Essentials

extension Router {
    /// `request` answered in this process, as a connection answers it but without one: the
    /// request is resolved, its route's middleware and responder run, blocking work runs on the
    /// calling thread, and an error thrown is rendered by `errorRenderer`. For tests of routes
    /// that need no socket. What only a connection does is not done: no head checks (a 401 or
    /// 413 before the body, `Expect`), no framing (`Content-Length`, `Connection`, `Date`, a
    /// HEAD's body dropped), no worker queue or read lane (the work runs at once), and a route
    /// that streams its request body gets none.
    public func answerInProcess(_ request: HTTPRequest, peer: IPAddress, errorRenderer: ErrorRenderer) -> HTTPResponse {
        let resolution = resolve(method: request.method, path: request.path)
        let context = RequestContext(
            peerAddress: peer, parameters: resolution.parameters, routePattern: resolution.pattern,
            routeIndex: resolution.routeIndex, host: request.headers["Host"], cancellation: CancellationFlag())
        do {
            switch try resolution.responder.respond(to: request, context: context) {
            case let .response(response): return response
            case let .blocking(work): return try work()
            }
        } catch {
            return errorRenderer.render(error, request: request, context: context)
        }
    }
}
