import Essentials
import Foundation
import HTTPServer

/// `/`, `/healthz`, `/readyz` and `/openapi.yaml`: what operators and their tooling ask.
struct SystemRoutes {
    let state: ServiceState
    let spec: [UInt8]
    /// True while the store refuses writes because the disk is full (reads go on).
    let diskFull: @Sendable () -> Bool
    /// Whether the database answers (PostgreSQL: a `SELECT 1` through the pool; a full pool
    /// counts as answering): nil from it when it does, the failure otherwise; no closure when
    /// it is a file that is always there. It may wait, so `/readyz` then runs on a worker.
    let ping: (@Sendable () -> (any UnavailableDependency)?)?
    /// The read replicas (nil: none): `/readyz` lists them with their lag. A replica that does
    /// not answer leaves the instance ready (the primary serves its reads).
    var replicas: (@Sendable () -> [ReplicaStatus])? = nil

    static let healthBody = Array("{\"status\":\"ok\"}\n".utf8)
    static let readyBody = Array("{\"status\":\"ready\"}\n".utf8)
    /// Still 200: reads are served, and a restart would not free any space.
    static let diskFullBody = Array(
        "{\"status\":\"disk-full\",\"detail\":\"The server's disk is full: writes are refused with 507 until space is freed; reads are served.\"}\n".utf8)

    func register(into routes: inout RouterBuilder) {
        let healthy = HTTPResponse(contentType: "application/json", bytes: Self.healthBody, headers: ["Cache-Control": "no-store"])
        routes.add(.get, "/healthz") { _, _ in healthy }

        let ready = HTTPResponse(contentType: "application/json", bytes: Self.readyBody, headers: ["Cache-Control": "no-store"])
        let diskFullResponse = HTTPResponse(contentType: "application/json", bytes: Self.diskFullBody, headers: ["Cache-Control": "no-store"])
        let answer: @Sendable () throws -> HTTPResponse = { [state, diskFull] in
            guard !state.isDraining else {
                throw HTTPError(.serviceUnavailable, detail: "The server is shutting down; send requests to another instance.",
                                headers: ["Retry-After": "5", "Cache-Control": "no-store"])
            }
            return diskFull() ? diskFullResponse : ready
        }
        if let ping {
            // 503 while the database does not answer: a proxy's health check then sends
            // traffic elsewhere (while it is away for every instance, none is ready).
            routes.add(.get, "/readyz", options: .workerPool) { [replicas, diskFull] _, _ in
                let response = try answer()
                // The same problem as any request that needs the database gets.
                if let failure = ping() { return DependencyUnavailable.error(failure).response() }
                guard let replicas, !diskFull() else { return response }
                return try Self.ready(replicas: replicas())
            }
        } else {
            routes.add(.get, "/readyz") { _, _ in try answer() }
        }

        let specResponse = HTTPResponse(
            contentType: "application/yaml", bytes: spec,
            headers: ["ETag": ETag.strong(for: spec), "Cache-Control": "no-cache"])
        routes.add(.get, "/openapi.yaml") { request, _ in
            try ConditionalGET.respond(to: request, with: specResponse)
        }

        // A browser (its Accept names text/html) is sent to the web app; anything else (curl
        // sends */*) gets the index of links. Both answers vary by Accept. The Location is
        // relative, so it also works under a proxy's path prefix.
        let toApp = HTTPResponse(status: .found, headers: ["Location": "app/", "Vary": "Accept", "Cache-Control": "no-cache"])
        routes.add(.get, "/") { request, context in
            if Self.acceptsHTML(request.headers["Accept"]) { return toApp }
            return try ConditionalGET.respond(
                to: request,
                with: JSONBody.response(Self.indexDocument(prefix: context.pathPrefix), pretty: request.wantsPretty,
                                        headers: ["Vary": "Accept", "Cache-Control": "no-cache"]))
        }
    }

    /// `/readyz`'s answer with the replicas listed.
    static func ready(replicas: [ReplicaStatus]) throws -> HTTPResponse {
        struct Ready: Encodable {
            var status = "ready"
            let replicas: [ReplicaStatus]
        }
        return try JSONBody.response(Ready(replicas: replicas), headers: ["Cache-Control": "no-store"])
    }

    /// Whether an `Accept` header names `text/html` (with a quality above zero): what
    /// browsers send when they navigate. `*/*` alone does not count.
    static func acceptsHTML(_ accept: String?) -> Bool {
        guard let accept else { return false }
        return accept.split(separator: ",").contains { range in
            let parts = range.split(separator: ";").map { $0.trimmingASCIIWhitespace().lowercased() }
            guard parts.first == "text/html" else { return false }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            return quality > 0
        }
    }

    /// The index of links at `/`; behind a proxy's path prefix (`X-Forwarded-Prefix`) each
    /// link starts with it.
    static func indexDocument(prefix: String = "") -> ServiceIndex {
        var index = ServiceIndex(
            service: "bluelibrary",
            version: BlueLibraryVersion.current,
            links: [
                .init(rel: "albums", href: "/albums", title: "The albums, a page at a time (follow next or Link: rel=next)"),
                .init(rel: "album-at", href: "/albums/at/{index}", title: "The album at an index"),
                .init(rel: "undo", href: "/undo", title: "Undo stack; POST undoes the last change"),
                .init(rel: "state", href: "/state", title: "Saved current album (?client= names a client)"),
                .init(rel: "archive", href: "/archive", title: "Export (GET) or replace (PUT) the whole library"),
                .init(rel: "libraries", href: "/libraries",
                      title: "The libraries; every album route also exists under /libraries/{lib}/ (without it: default)"),
                .init(rel: "app", href: "/app/", title: "The web app (browsers opening / are sent there)"),
                .init(rel: "health", href: "/healthz", title: "Liveness probe"),
                .init(rel: "ready", href: "/readyz", title: "Readiness probe (503 while draining or while the database does not answer)"),
                .init(rel: "openapi", href: "/openapi.yaml", title: "OpenAPI 3.1 description of every route"),
                .init(rel: "docs", href: "/docs/", title: "The API reference (openapi.yaml as a readable page)"),
            ])
        if !prefix.isEmpty {
            index.links = index.links.map { .init(rel: $0.rel, href: prefix + $0.href, title: $0.title) }
        }
        return index
    }

    /// Reads the bundled OpenAPI document.
    static func loadSpec() throws -> [UInt8] {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml") else {
            throw ConfigurationError("openapi.yaml is missing from the resource bundle")
        }
        return Array(try Data(contentsOf: url))
    }
}

struct ServiceIndex: Encodable {
    struct Link: Encodable {
        let rel: String
        let href: String
        let title: String
    }
    let service: String
    let version: String
    var links: [Link]
}

/// The one version string: `bluelibrary --version`, `GET /`, the "listening" log line. The
/// contract's `info.version` and CHANGELOG.md's newest section are kept equal to it (a test
/// checks). Raised with every round that changes what an operator or a client sees.
public enum BlueLibraryVersion {
    public static let current = "0.2.0"
}
