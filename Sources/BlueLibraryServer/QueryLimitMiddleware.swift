import Essentials
import HTTPServer
import Library

/// Gives every read request's blocking work a ``QueryBudget``: its database work may take at
/// most `timeLimit` (`BLUELIBRARY_QUERY_TIMEOUT`, counted from the start of its first read), and
/// it stops when its client goes away (the connection's ``RequestContext/cancellation``). The
/// stores look the budget up on the worker thread (SQLite's progress handler; PostgreSQL's
/// `statement_timeout` and a cancel request), and a stopped read answers 503
/// `query-too-expensive` or, for a client that left, 499 (see ``QueryLimit``).
///
/// Never cut: writes (any method but GET and HEAD: a write the client sent is committed or
/// refused in full, whether or not it waits for the answer), and `GET /archive` exports, long by
/// nature, which run on the export pool under their own policy (`ExportPolicy`: the slowest
/// client served, the wait for a turn) and stop when their client stops reading.
struct QueryLimitMiddleware: HTTPMiddleware {
    /// nil: no time limit (cancellation still applies).
    let timeLimit: Duration?
    let counters: QueryInterruptionCounters

    func handle(_ request: HTTPRequest, context: RequestContext, next: any HTTPResponder) throws -> HTTPReply {
        let reply = try next.respond(to: request, context: context)
        guard case let .blocking(work) = reply, request.method == .get || request.method == .head,
              !(context.routePattern?.hasSuffix("/archive") ?? false)
        else { return reply }
        let budget = QueryBudget(timeLimit: timeLimit, cancellation: context.cancellation, counters: counters)
        return .blocking { try QueryBudget.$current.withValue(budget) { try work() } }
    }
}

/// The answers for a read its ``QueryBudget`` stopped.
enum QueryLimit {
    /// The stop behind `error`, looking through the wrappers a store error travels in.
    static func cause(of error: any Error) -> QueryInterrupted? {
        switch error {
        case let interrupted as QueryInterrupted: return interrupted
        case let error as LibraryError:
            if case let .storage(underlying) = error { return cause(of: underlying.error) }
            return nil
        default: return nil
        }
    }

    /// 503 `query-too-expensive` for a read past its time limit, with what to change; 499 for
    /// one whose client went away (nobody reads it: it is what the access log and the metrics
    /// record, as nginx's "client closed request").
    ///
    /// No `Retry-After` on the 503: the same read would most likely cost the same again, so the
    /// answer asks for a cheaper request rather than a later one (a client that retries on
    /// 503 + `Retry-After` must not loop on it).
    static func error(_ interrupted: QueryInterrupted) -> HTTPError {
        switch interrupted.reason {
        case let .timeLimit(limit):
            return HTTPError(
                .serviceUnavailable,
                detail: "This read needed more than the server's limit of \(seconds(limit)) of database work and was stopped. "
                    + "Ask for less: add a filter, continue with the previous page's next cursor instead of a deep offset, "
                    + "make q more specific, or leave out count=true. Repeating the same request will most likely fail the same way.",
                type: "urn:bluelibrary:problem:query-too-expensive", title: "Query too expensive",
                headers: ["Cache-Control": "no-store"])
        case .cancelled:
            return HTTPError(
                clientClosedRequest,
                detail: "The client closed the connection before the answer was ready; the read was stopped.",
                type: "urn:bluelibrary:problem:client-closed-request", title: "Client closed request",
                headers: ["Cache-Control": "no-store"])
        }
    }

    /// The status nginx logs for a request whose client closed the connection first.
    static let clientClosedRequest = HTTPStatus(code: 499, reasonPhrase: "Client Closed Request")

    /// `2 s`, `0.05 s`.
    static func seconds(_ duration: Duration) -> String {
        let milliseconds = duration.milliseconds
        if milliseconds % 1000 == 0 { return "\(milliseconds / 1000) s" }
        return "\(Double(milliseconds) / 1000) s"
    }
}
