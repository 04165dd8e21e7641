import HTTPServer
import Library
import ServerRecords

/// What each route needs under the lock: a scope (``AccessKey/Scope``) and the libraries it
/// acts in. One table (``rules``), keyed by method and route pattern; `openapi.yaml`'s
/// `security` of every operation names the same scope (a test keeps them equal).
struct AccessRule: Sendable, Equatable {
    enum Target: Sendable, Equatable {
        /// The route's library: `{lib}`, else `default` (for `/events`, also its `library`
        /// query parameters). A key for other libraries gets 404, as for a library that does
        /// not exist.
        case library
        /// The `{view}` view's sources: all of them must be the key's (none: 404; some: 403).
        case view
        /// The whole server: a key for every library.
        case server
        /// A list of libraries or views: any key with the scope; the answer holds what it may read.
        case listing
        /// `GET /keys/self`: whoever asks, with a key or without.
        case caller
    }

    let scope: AccessKey.Scope
    let target: Target

    static func read(_ target: Target) -> AccessRule { AccessRule(scope: .read, target: target) }
    static func write(_ target: Target) -> AccessRule { AccessRule(scope: .write, target: target) }
    static func admin(_ target: Target) -> AccessRule { AccessRule(scope: .admin, target: target) }
}

/// Who is asking, as far as the lock is concerned.
enum AccessGrant: Sendable, Equatable {
    /// The lock is off: everything, for everybody.
    case everyone
    /// The lock is on and no key was sent: reads when they are open (`protectReads` off).
    case anonymous(readsOpen: Bool)
    case key(AccessKey)

    func allows(_ scope: AccessKey.Scope) -> Bool {
        switch self {
        case .everyone: true
        case let .anonymous(readsOpen): readsOpen && scope == .read
        case let .key(key): key.allows(scope)
        }
    }

    /// The libraries the grant is limited to, nil for all.
    var libraries: [String]? {
        if case let .key(key) = self { return key.libraries }
        return nil
    }

    func allows(library id: LibraryID) -> Bool { libraries?.contains(id.rawValue) ?? true }

    /// The key, if one was sent.
    var key: AccessKey? {
        if case let .key(key) = self { return key }
        return nil
    }
}

enum AccessPolicy {
    /// Paths open to everyone for reads whatever the lock: probes, the API description, and `/`, an
    /// index of links with no library data that sends browsers to the app. `/metrics` is not
    /// one: its counters describe the library's use, so it needs a read key once reads are
    /// protected (a scraper sends one).
    static let alwaysOpen: Set<String> = ["/", "/healthz", "/readyz", "/openapi.yaml"]
    /// Mount points of static resources (``StaticResources``) that stay open: the mount and
    /// everything under it. The web app holds no data; it asks for a key itself when the API
    /// answers 401. `/docs` is the API reference, as open as `/openapi.yaml`.
    static let alwaysOpenPrefixes: [String] = ["/app", "/docs"]

    /// Whether `path` is always open.
    static func isAlwaysOpen(_ path: String) -> Bool {
        alwaysOpen.contains(path) || alwaysOpenPrefixes.contains { path == $0 || path.hasPrefix($0 + "/") }
    }

    /// The rule of every route but the open ones, by `"METHOD pattern"` (HEAD as GET).
    static let rules: [String: AccessRule] = {
        var rules: [String: AccessRule] = [
            "GET /metrics": .read(.server),
            "GET /settings": .admin(.server),
            "PATCH /settings": .admin(.server),
            "GET /libraries": .read(.listing),
            "POST /libraries": .admin(.server),
            "GET /libraries/{lib}": .read(.library),
            "PATCH /libraries/{lib}": .admin(.library),
            "DELETE /libraries/{lib}": .admin(.library),
            "GET /views": .read(.listing),
            "POST /views": .admin(.server),
            "GET /views/{view}": .read(.view),
            "PATCH /views/{view}": .admin(.server),
            "DELETE /views/{view}": .admin(.server),
            "GET /views/{view}/albums": .read(.view),
            "POST /views/{view}/albums": .write(.view),
            "GET /views/{view}/albums/at/{index}": .read(.view),
            "DELETE /views/{view}/albums/at/{index}": .write(.view),
            "GET /keys": .admin(.server),
            "POST /keys": .admin(.server),
            "GET /keys/self": .read(.caller),
            "GET /keys/{id}": .admin(.server),
            "PATCH /keys/{id}": .admin(.server),
            "DELETE /keys/{id}": .admin(.server),
            "POST /api/addAlbum": .write(.library),
            "POST /api/deleteAlbum": .write(.library),
        ]
        let libraryRoutes: [(String, AccessRule)] = [
            ("GET /albums", .read(.library)),
            ("POST /albums", .write(.library)),
            ("POST /albums/import", .write(.library)),
            ("POST /batch", .write(.library)),
            ("GET /albums/{id}", .read(.library)),
            ("PATCH /albums/{id}", .write(.library)),
            ("DELETE /albums/{id}", .write(.library)),
            ("GET /albums/{id}/cover", .read(.library)),
            ("DELETE /albums/{id}/cover", .write(.library)),
            ("GET /albums/{id}/table", .read(.library)),
            ("POST /albums/{id}/move", .write(.library)),
            ("GET /albums/at/{index}", .read(.library)),
            ("DELETE /albums/at/{index}", .write(.library)),
            ("GET /undo", .read(.library)),
            ("POST /undo", .write(.library)),
            ("GET /state", .read(.library)),
            ("PUT /state", .write(.library)),
            ("GET /archive", .read(.library)),
            ("PUT /archive", .admin(.library)),
            ("GET /events", .read(.library)),
            ("GET /changes", .read(.library)),
        ]
        for (route, rule) in libraryRoutes {
            rules[route] = rule
            let parts = route.split(separator: " ", maxSplits: 1)
            rules["\(parts[0]) /libraries/{lib}\(parts[1])"] = rule
        }
        return rules
    }()

    /// ``rules`` by route pattern, then method: what every request looks up (no string is
    /// built for it).
    static let byPattern: [String: [HTTPMethod: AccessRule]] = {
        var table: [String: [HTTPMethod: AccessRule]] = [:]
        for (route, rule) in rules {
            let parts = route.split(separator: " ", maxSplits: 1)
            table[String(parts[1]), default: [:]][HTTPMethod(rawValue: String(parts[0]))] = rule
        }
        return table
    }()

    /// The rule for `method` on `path`, matched as the route `pattern` (nil: open to everyone).
    /// A method the route does not have (or no route: a 404 to come) needs what any read or
    /// write of the default library needs.
    static func rule(method: HTTPMethod, path: Substring, pattern: String?) -> AccessRule? {
        if let pattern, let rule = byPattern[pattern]?[method == .head ? .get : method] { return rule }
        let isRead = method == .get || method == .head || method == .options
        if isRead, isAlwaysOpen(String(path)) { return nil }
        return isRead ? .read(.library) : .write(.library)
    }

    /// What a grant that holds the rule's scope may not do: the libraries of the request
    /// (`libraries`: the route's own; for a view, its sources) against the grant's.
    enum Verdict: Equatable {
        case allowed
        /// 401: no key, and the route needs one.
        case keyRequired
        /// 403 with what is missing.
        case forbidden(String)
        /// 404: the library (or view) is not one this key may see.
        case hidden
    }

    static func verdict(_ rule: AccessRule, grant: AccessGrant, libraries: [LibraryID]) -> Verdict {
        guard grant.allows(rule.scope) else {
            guard let key = grant.key else { return .keyRequired }
            return .forbidden("The key \(key.id) has the scopes \(key.scopes.map(\.rawValue).joined(separator: ", ")); this request needs \(rule.scope.rawValue).")
        }
        switch rule.target {
        case .caller, .listing:
            return .allowed
        case .server:
            guard let limited = grant.libraries else { return .allowed }
            return .forbidden("The key \(grant.key?.id ?? "") is limited to the libraries \(limited.joined(separator: ", ")); this request needs a key for every library.")
        case .library:
            return libraries.allSatisfy(grant.allows(library:)) ? .allowed : .hidden
        case .view:
            let allowed = libraries.filter(grant.allows(library:))
            if allowed.count == libraries.count { return .allowed }
            if allowed.isEmpty { return .hidden }
            return .forbidden("This view shows libraries the key \(grant.key?.id ?? "") may not use; ask for its sources one by one.")
        }
    }
}
