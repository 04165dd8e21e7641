/// A decision taken once a request head is parsed, before any of its body is read and before
/// `100 Continue` is sent: a request that will be refused (e.g. 401 for a missing token) is
/// answered from its head, and the connection is closed, so an unauthenticated client cannot
/// make the server read or buffer a body. Runs only for requests that have a body.
public struct HeadCheck: Sendable {
    public enum Verdict: Sendable {
        /// Read the body and handle the request as usual.
        case proceed
        /// Answer this at once (the connection is closed after it; the body is never read).
        case refuse(HTTPResponse)
        /// The decision needs blocking work: the closure runs on the worker pool (nil: proceed)
        /// while the connection waits, reading nothing.
        case decideOnWorker(@Sendable () -> HTTPResponse?)
    }

    let evaluate: @Sendable (_ head: HTTPRequest, _ context: RequestContext) -> Verdict

    /// `evaluate` gets the request without its body, on the event loop: it must not block.
    public init(_ evaluate: @escaping @Sendable (_ head: HTTPRequest, _ context: RequestContext) -> Verdict) {
        self.evaluate = evaluate
    }
}
