import BlueLibraryAPI
import Foundation
import HTTPServer
import Library
import ServerRecords

/// API keys: `GET/POST /keys`, `GET/PATCH/DELETE /keys/{id}` (admin keys for every library;
/// ``AccessPolicy``) and `GET /keys/self`. Every change is stored, then the guard re-reads the
/// keys; other instances on the same database re-read them when its access signal moves.
///
/// `POST /keys` answers the whole key once, in `secret`; only its SHA-256 is kept. It takes no
/// `Idempotency-Key`: a replayed answer would have to keep the secret.
struct KeyRoutes {
    let control: AccessControl
    let clock: @Sendable () -> Date

    var guardian: AccessGuard { control.guardian }

    func register(into routes: inout RouterBuilder) {
        routes.add(.get, "/keys", options: .workerPool, list)
        routes.add(.post, "/keys", options: .workerPool, create)
        routes.add(.get, "/keys/self", whoAmI)
        routes.add(.get, "/keys/{id}", options: .workerPool, show)
        routes.add(.patch, "/keys/{id}", options: .workerPool, change)
        routes.add(.delete, "/keys/{id}", options: .workerPool, delete)
    }

    func list(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let keys = try guardian.store.accessKeys()
        return try JSONBody.response(KeyListResource(keys: keys.map { Self.resource($0) }), pretty: request.wantsPretty,
                                     headers: ["Cache-Control": "no-store"])
    }

    /// 201 with `Location: /keys/{id}` and the key in `secret`, the one time it is shown.
    func create(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        try RequestInput.requireJSON(request)
        let now = clock()
        let input = try Self.decoded { () throws(LibraryError) in try KeyRequest.decodeCreation(json: request.body, now: now) }
        let secret = try KeySecret.make()
        let key = AccessKey(
            id: secret.id, name: input.name ?? secret.id, scopes: input.scopes ?? [], libraries: input.libraries ?? nil,
            expiresAt: input.expiresAt ?? nil, createdAt: now, secret: secret.hash)
        try guardian.store.saveAccessKey(key)
        try guardian.reloadKeys()
        return try JSONBody.response(
            Self.resource(key, secret: secret.text), status: .created, pretty: request.wantsPretty,
            headers: ["Location": RequestInput.absoluteURL("/keys/\(key.id)", context), "Cache-Control": "no-store"])
    }

    func show(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let key = try stored(context)
        return try JSONBody.response(Self.resource(key), pretty: request.wantsPretty, headers: ["Cache-Control": "no-store"])
    }

    /// Changes the name, scopes, libraries or expiry (the secret stays); 409 when the lock is
    /// on and no admin key for every library would be left.
    func change(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        try RequestInput.requireJSON(request)
        var key = try stored(context)
        let input = try Self.decoded { () throws(LibraryError) in try KeyRequest.decode(json: request.body, now: clock()) }
        if let name = input.name { key.name = name }
        if let scopes = input.scopes { key.scopes = Array(Set(scopes)).sorted() }
        if let libraries = input.libraries { key.libraries = libraries }
        if let expiresAt = input.expiresAt { key.expiresAt = expiresAt }
        try keepsAnAdmin(replacing: key.id, with: key)
        try guardian.store.saveAccessKey(key)
        try guardian.reloadKeys()
        return try JSONBody.response(Self.resource(key), pretty: request.wantsPretty, headers: ["Cache-Control": "no-store"])
    }

    /// 204: the key stops working on this instance at once, on the others within a second.
    func delete(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let key = try stored(context)
        try keepsAnAdmin(replacing: key.id, with: nil)
        try guardian.store.deleteAccessKey(id: key.id)
        try guardian.reloadKeys()
        return HTTPResponse(status: .noContent)
    }

    /// Who the caller is: its key (without secret) and what it may do now.
    func whoAmI(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let grant = control.grant(request)
        let scopes = AccessKey.Scope.allCases.filter(grant.allows).map(\.rawValue)
        let document = KeySelfResource(
            key: grant.key.map { Self.resource($0) }, scopes: scopes, libraries: grant.libraries,
            locked: guardian.settings.passcodeEnabled)
        return try JSONBody.response(document, pretty: request.wantsPretty, headers: ["Cache-Control": "no-store", "Vary": "Authorization"])
    }

    // MARK: - Helpers

    static func resource(_ key: AccessKey, secret: String? = nil) -> KeyResource {
        KeyResource(id: key.id, name: key.name, scopes: key.scopes.map(\.rawValue), libraries: key.libraries,
                    expiresAt: key.expiresAt, createdAt: key.createdAt, secret: secret)
    }

    private func stored(_ context: RequestContext) throws -> AccessKey {
        let id = context.parameters["id"] ?? ""
        guard let key = try guardian.store.accessKeys().first(where: { $0.id == id }) else {
            throw HTTPError(
                .notFound, detail: "There is no key \(id.prefix(40)); GET /keys lists them.",
                type: "urn:bluelibrary:problem:key-not-found", title: "Key not found")
        }
        return key
    }

    /// Refuses a change that would leave a locked server without an admin key for every
    /// library (nobody could then change the settings or the keys).
    private func keepsAnAdmin(replacing id: String, with key: AccessKey?) throws {
        guard guardian.settings.passcodeEnabled else { return }
        var keys = try guardian.store.accessKeys().filter { $0.id != id }
        if let key { keys.append(key) }
        let now = clock()
        guard !keys.contains(where: { $0.allows(.admin) && $0.libraries == nil && !$0.isExpired(at: now) }) else { return }
        throw HTTPError(
            .conflict,
            detail: "The lock is on and this would leave no admin key for every library; create another admin key first, or turn the lock off (PATCH /settings access.passcodeEnabled=false).",
            type: "urn:bluelibrary:problem:last-admin-key", title: "Last admin key")
    }

    private static func decoded(_ body: () throws(LibraryError) -> KeyRequest) throws -> KeyRequest {
        do {
            return try body()
        } catch {
            throw error.inContext(invalidTitle: "Invalid key")
        }
    }
}
