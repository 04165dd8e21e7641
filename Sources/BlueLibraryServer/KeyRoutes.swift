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
        // A new id never replaces a key: on the (1 in 2^40 per key) chance that it is taken, another.
        for _ in 0..<3 {
            let secret = try KeySecret.make()
            let key = AccessKey(
                id: secret.id, name: input.name ?? secret.id, scopes: input.scopes ?? [], libraries: input.libraries ?? nil,
                expiresAt: input.expiresAt ?? nil, createdAt: now, secret: secret.hash)
            let stored = try guardian.store.changeAccessKeys { keys in
                keys.contains { $0.id == key.id } ? (.none, false) : (.save(key), true)
            }
            guard stored else { continue }
            try guardian.reloadKeys()
            return try JSONBody.response(
                Self.resource(key, secret: secret.text), status: .created, pretty: request.wantsPretty,
                headers: ["Location": RequestInput.absoluteURL("/keys/\(key.id)", context), "Cache-Control": "no-store"])
        }
        throw HTTPError(.internalServerError, detail: "Three new key ids in a row were taken; the server's random source is suspect.")
    }

    func show(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let key = try Self.named(context, in: try guardian.store.accessKeys())
        return try JSONBody.response(Self.resource(key), pretty: request.wantsPretty, headers: ["Cache-Control": "no-store"])
    }

    /// Changes the name, scopes, libraries or expiry (the secret stays); 409 when the lock is
    /// on and no admin key for every library without an expiry would be left. The check and
    /// the change are one transaction of the keys (two admins changing keys at once take turns).
    func change(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        try RequestInput.requireJSON(request)
        let input = try Self.decoded { () throws(LibraryError) in try KeyRequest.decode(json: request.body, now: clock()) }
        let locked = guardian.settings.passcodeEnabled
        let key = try guardian.store.changeAccessKeys { keys in
            var key = try Self.named(context, in: keys)
            if let name = input.name { key.name = name }
            if let scopes = input.scopes { key.scopes = Array(Set(scopes)).sorted() }
            if let libraries = input.libraries { key.libraries = libraries }
            if let expiresAt = input.expiresAt { key.expiresAt = expiresAt }
            if locked { try Self.keepsAnAdmin(keys.filter { $0.id != key.id } + [key]) }
            return (.save(key), key)
        }
        try guardian.reloadKeys()
        return try JSONBody.response(Self.resource(key), pretty: request.wantsPretty, headers: ["Cache-Control": "no-store"])
    }

    /// 204: the key stops working on this instance at once, on the others within a second.
    func delete(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let locked = guardian.settings.passcodeEnabled
        try guardian.store.changeAccessKeys { keys in
            let key = try Self.named(context, in: keys)
            if locked { try Self.keepsAnAdmin(keys.filter { $0.id != key.id }) }
            return (.delete(id: key.id), ())
        }
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

    /// The key the route's `{id}` names among `keys`; 404 `key-not-found`.
    private static func named(_ context: RequestContext, in keys: [AccessKey]) throws -> AccessKey {
        let id = context.parameters["id"] ?? ""
        guard let key = keys.first(where: { $0.id == id }) else {
            throw HTTPError(
                .notFound, detail: "There is no key \(id.prefix(40)); GET /keys lists them.",
                type: "urn:bluelibrary:problem:key-not-found", title: "Key not found")
        }
        return key
    }

    /// Refuses keys that would leave a locked server without an admin key for every library
    /// that never expires (nobody could then change the settings or the keys).
    private static func keepsAnAdmin(_ keys: [AccessKey]) throws {
        guard !keys.contains(where: AccessGuard.keepsTheLockOpenable) else { return }
        throw HTTPError(
            .conflict,
            detail: "The lock is on and this would leave no admin key for every library without an expiry; create another such key first, or turn the lock off (PATCH /settings access.passcodeEnabled=false).",
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
