import HTTPServer
import Library
import ServerRecords

/// The lock as a decorator around every route, and the same decision from a request's head
/// (before any body byte is read): the key's check (``AccessGuard``) and what the route needs
/// (``AccessPolicy``). Refusals: 401 with `WWW-Authenticate: Bearer` for a missing, wrong or
/// expired key, 429 with `Retry-After` for a locked address or key, 403 for a key without the
/// scope or the libraries, 404 (as for a library that does not exist) for a library the key
/// may not see. It never logs or echoes a secret.
struct AccessControl: Sendable {
    let guardian: AccessGuard
    let libraries: Libraries
    let logger: JSONLogger

    enum Outcome {
        case proceed
        case refuse(HTTPResponse)
        /// Deciding needs a slow hash, a write or a store read: run ``decide(_:_:client:onLoop:)`` again on a worker.
        case needsWorker
    }

    /// The decision for `request` from `client`. On the loop (`onLoop`), anything that would
    /// block answers `.needsWorker` instead.
    /// `countsUse`: the decision that counts (the middleware's, not the head's, so a request
    /// counts once): a request let in with a key counts for that key's metric, and for the
    /// allowance of a locked address.
    func decide(_ request: HTTPRequest, _ context: RequestContext, client: String, onLoop: Bool, countsUse: Bool = false) -> Outcome {
        // The common case, no lock configured, costs one atomic load.
        guard guardian.settings.passcodeEnabled,
              let rule = AccessPolicy.rule(method: request.method, path: request.path, pattern: context.routePattern)
        else { return .proceed }
        let authorization = request.headers["Authorization"]
        // A read while reads are open needs no key; a key sent with it must still be right (a
        // client that sends one is told when it is wrong), and adds nothing.
        let readsOpen = rule.target != .caller && rule.scope == .read && !guardian.settings.readsProtected
        if authorization == nil, readsOpen || rule.target == .caller { return .proceed }
        let key: AccessKey
        if let authorization, let remembered = guardian.rememberedKey(authorization: authorization) {
            key = remembered
        } else {
            if onLoop, !guardian.isQuick(authorization: authorization, client: client) { return .needsWorker }
            let decision: AccessGuard.Decision
            do {
                decision = try guardian.check(authorization: authorization, client: client)
            } catch {
                logger.log(.error, "access check failed", [("error", .string(String(describing: error))), ("requestId", .string(context.requestID))])
                if let dependency = DependencyUnavailable.cause(of: error) { return .refuse(DependencyUnavailable.error(dependency).response()) }
                return .refuse(HTTPError(.internalServerError, detail: "The server could not check the key. Quote request id \(context.requestID) when reporting it.")
                    .response())
            }
            guard case let .allowed(allowed) = decision else { return .refuse(Self.refusal(for: decision)) }
            key = allowed
        }
        // A right key from a locked address works, at a bounded rate (the passcode never
        // gets here from one: it is refused there).
        if countsUse, key.id != AccessKey.tokenID, let throttled = guardian.allowance(client: client) {
            return .refuse(Self.refusal(for: throttled))
        }
        if readsOpen {
            if countsUse { guardian.countUse(of: key.id) }
            return .proceed
        }
        let grant = AccessGrant.key(key)
        // Which libraries the request touches matters only for a key limited to some.
        var names: [LibraryID] = []
        if key.libraries != nil {
            switch rule.target {
            case .library:
                names = Self.libraries(of: request, context)
            case .view:
                if onLoop { return .needsWorker }
                guard let text = context.parameters["view"], let id = try? ViewID(validating: text),
                      let view = try? libraries.view(id)
                else { return .proceed }  // the route answers the 404 of a view that is not there
                names = view.sources
            case .server, .listing, .caller:
                break
            }
        }
        switch AccessPolicy.verdict(rule, grant: grant, libraries: names) {
        case .allowed:
            if countsUse { guardian.countUse(of: key.id) }
            return .proceed
        case .keyRequired:
            return .refuse(Self.refusal(for: .unauthorized(invalidToken: false)))
        case let .forbidden(detail):
            return .refuse(HTTPError(.forbidden, detail: detail, type: "urn:bluelibrary:problem:forbidden", title: "Not allowed for this key").response())
        case .hidden:
            if rule.target == .view, let text = context.parameters["view"] {
                return .refuse(Self.notFound(LibraryError.viewNotFound(ViewID(rawValue: text))))
            }
            let hidden = names.first { !grant.allows(library: $0) } ?? .default
            return .refuse(Self.notFound(LibraryError.libraryNotFound(hidden)))
        }
    }

    /// The libraries a `.library` route acts in: `{lib}` or `default`, and the `library`
    /// query parameters of `/events` (ids that are not valid are left to the route's 400).
    static func libraries(of request: HTTPRequest, _ context: RequestContext) -> [LibraryID] {
        if let text = context.parameters["lib"] { return [LibraryID(rawValue: text)] }
        if context.routePattern == "/events" {
            let named = QueryParameters(request).texts("library").map(LibraryID.init(rawValue:))
            if !named.isEmpty { return named }
        }
        return [.default]
    }

    /// Who sent `request`, from memory (for routes that answer by it: lists, `/keys/self`, a
    /// move's destination). Runs after the decision let the request in, so a key that is not
    /// right here was never needed: the request is anonymous.
    func grant(_ request: HTTPRequest) -> AccessGrant {
        guard guardian.settings.passcodeEnabled else { return .everyone }
        let anonymous = AccessGrant.anonymous(readsOpen: !guardian.settings.readsProtected)
        guard let key = guardian.verifiedKey(authorization: request.headers["Authorization"]) else { return anonymous }
        return .key(key)
    }

    /// Whether the sender of `request` may use library `id` with `scope`: what lists show
    /// (read) and where a move may take an album (write), beyond the route's own library.
    func allows(_ request: HTTPRequest, _ scope: AccessKey.Scope, library id: LibraryID) -> Bool {
        if scope == .read, !guardian.settings.readsProtected { return true }
        let grant = grant(request)
        return grant.allows(scope) && grant.allows(library: id)
    }

    private static func notFound(_ error: LibraryError) -> HTTPResponse {
        (error.problem ?? HTTPError(.notFound, detail: error.message)).response()
    }

    /// The response refusing a request for `decision` (never `.allowed`).
    static func refusal(for decision: AccessGuard.Decision) -> HTTPResponse {
        switch decision {
        case let .unauthorized(invalidToken, expired):
            let challenge = invalidToken ? #"Bearer realm="bluelibrary", error="invalid_token""# : #"Bearer realm="bluelibrary""#
            let detail = expired
                ? "This key has expired; ask an admin for a new one (or to extend it with PATCH /keys/{id})."
                : invalidToken
                ? "The bearer key is not right. Repeated failures lock this address out for a while."
                : "This server is locked: send Authorization: Bearer <key> with a key that may do this."
            return HTTPError(
                .unauthorized, detail: detail, type: "urn:bluelibrary:problem:unauthorized", title: "Key required",
                headers: ["WWW-Authenticate": challenge]
            ).response()
        case .busy:
            return HTTPError(
                .serviceUnavailable,
                detail: "Too many key checks are in progress; try again in a second.",
                headers: ["Retry-After": "1"]
            ).response()
        case let .locked(retryAfter):
            return HTTPError(
                .tooManyRequests,
                detail: "Too many wrong keys from this address; try again in \(retryAfter) seconds. A right key made by the server still works.",
                type: "urn:bluelibrary:problem:locked-out", title: "Locked out",
                headers: ["Retry-After": String(retryAfter)]
            ).response()
        case let .keyLocked(retryAfter):
            return HTTPError(
                .tooManyRequests,
                detail: "Too many wrong secrets for this key id; wrong ones are refused for \(retryAfter) seconds (its right secret still works).",
                type: "urn:bluelibrary:problem:locked-out", title: "Locked out",
                headers: ["Retry-After": String(retryAfter)]
            ).response()
        case let .throttled(retryAfter):
            return HTTPError(
                .tooManyRequests,
                detail: "This address is locked out after too many wrong keys; a right key still works from it, at most \(Int(AccessGuard.lockedRate)) requests a second until the lock passes. Try again in \(retryAfter) second.",
                type: "urn:bluelibrary:problem:locked-out", title: "Locked out",
                headers: ["Retry-After": String(retryAfter)]
            ).response()
        case .allowed:
            return HTTPError(.internalServerError, detail: "An allowed request was refused.").response()
        }
    }
}

/// ``AccessControl`` as a middleware: decides from memory on the loop, or moves the rest of
/// the chain to a worker when the decision needs a slow hash, a write or a store read.
struct AuthMiddleware: HTTPMiddleware {
    let control: AccessControl

    func handle(_ request: HTTPRequest, context: RequestContext, next: any HTTPResponder) throws -> HTTPReply {
        // No lock, no work: not even the client's address is made into a string.
        guard control.guardian.settings.passcodeEnabled else { return try next.respond(to: request, context: context) }
        let client = context.clientAddress
        switch control.decide(request, context, client: client, onLoop: true, countsUse: true) {
        case .proceed:
            return try next.respond(to: request, context: context)
        case let .refuse(response):
            return .response(response)
        case .needsWorker:
            return .blocking { [control] in
                switch control.decide(request, context, client: client, onLoop: false, countsUse: true) {
                case let .refuse(response): return response
                case .proceed, .needsWorker: return try next.respond(to: request, context: context).resolve()
                }
            }
        }
    }

    /// The same decision taken from the request head, before any body byte is read (and
    /// before `100 Continue`): a request that will be refused gets its 401/403/404/429 from the
    /// head and the connection is closed. Decisions that need a hash run off the loop.
    /// `cors` (when configured) stamps the refusals, which skip the middleware chain, so that a
    /// page of an allowed origin can read them, and lets its preflights through.
    static func headCheck(control: AccessControl, forwarded: ForwardedHeadersMiddleware, cors: CORSMiddleware? = nil) -> HeadCheck {
        HeadCheck { request, context in
            // A preflight from an allowed origin never carries the key; the CORS middleware
            // answers it (any other OPTIONS is a read like GET).
            guard cors?.preflightOrigin(of: request) == nil, control.guardian.settings.passcodeEnabled else { return .proceed }
            let client = forwarded.clientAddress(request, context)
            switch control.decide(request, context, client: client, onLoop: true) {
            case .proceed:
                return .proceed
            case let .refuse(response):
                return .refuse(cors?.stamped(response, request: request) ?? response)
            case .needsWorker:
                return .decideOnWorker {
                    guard case let .refuse(response) = control.decide(request, context, client: client, onLoop: false) else { return nil }
                    return cors?.stamped(response, request: request) ?? response
                }
            }
        }
    }
}
