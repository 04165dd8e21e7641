import HTTPServer
import Library

/// Which library a request means: the `{lib}` path parameter of the `/libraries/{lib}/...`
/// routes, or `default` when the route has no prefix. Every album route is one handler
/// registered for both prefixes (``LibraryRoutePrefix``) that asks this for its facade.
///
/// Rules:
/// - An id that breaks the id rules names no library: 404 `library-not-found`, like an
///   unknown one (the id is a path segment, not input to correct).
/// - ``loaded(_:)`` never reads the store (a lock and a dictionary lookup): the fast paths on
///   the event loop use it and decline (nil) when the library's facade is not made yet.
/// - ``facade(_:)`` may read the store once per library (to learn that it exists); for
///   worker-pool handlers.
struct LibraryResolver: Sendable {
    let libraries: Libraries

    /// The library id named by the route (`default` without a prefix).
    /// - Throws: 404 when the `{lib}` segment is not a valid library id.
    static func libraryID(_ context: RequestContext) throws -> LibraryID {
        guard let text = context.parameters["lib"] else { return .default }
        guard let id = try? LibraryID(validating: text) else {
            throw LibraryError.libraryNotFound(LibraryID(rawValue: text))
        }
        return id
    }

    /// The facade if it is in memory; nil when finding it needs the store.
    func loaded(_ context: RequestContext) throws -> LibraryFacade? {
        // `/albums` has no parameters at all: `default` without a dictionary lookup.
        guard !context.parameters.isEmpty, context.parameters["lib"] != nil else { return libraries.defaultLibrary }
        return libraries.loadedFacade(try Self.libraryID(context))
    }

    /// The facade of the library the route names.
    /// - Throws: 404 `library-not-found`.
    func facade(_ context: RequestContext) throws -> LibraryFacade {
        if let known = try loaded(context) { return known }
        let id = try Self.libraryID(context)
        let facade = try libraries.facade(id)
        // Learn the version now, on the worker: the fast paths then never read it.
        _ = try facade.currentVersion()
        return facade
    }

    /// The path prefix of the route as the client used it: `""` or `/libraries/{lib}`, for
    /// `Location` and `Link` headers that stay in the same form.
    static func pathPrefix(_ context: RequestContext) -> String {
        context.parameters["lib"].map { "/libraries/\($0)" } ?? ""
    }
}

/// The two forms of every album route: `/albums...` (the library `default`) and
/// `/libraries/{lib}/albums...`.
enum LibraryRoutePrefix {
    static let both = ["", "/libraries/{lib}"]
}

extension RouterBuilder {
    /// Adds `pattern` and `/libraries/{lib}` + `pattern` with the same handler.
    mutating func addForEachLibrary(
        _ method: HTTPMethod, _ pattern: String, options: RouteOptions = .inline,
        _ handler: @escaping @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse
    ) {
        for prefix in LibraryRoutePrefix.both { add(method, prefix + pattern, options: options, handler) }
    }

    /// Adds `pattern` and `/libraries/{lib}` + `pattern` with the same fast and blocking paths
    /// (`options`: `.expensiveRead` for a blocking path in the read lane).
    mutating func addForEachLibrary(
        _ method: HTTPMethod, _ pattern: String, options: RouteOptions = .inline,
        fast: @escaping @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse?,
        blocking: @escaping @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse
    ) {
        for prefix in LibraryRoutePrefix.both { add(method, prefix + pattern, options: options, fast: fast, blocking: blocking) }
    }
}
