import Covers
import Foundation
import HTTPServer
import Library

/// `GET /albums/{id}/cover` and `DELETE /albums/{id}/cover`: the tutorial's `downloadImage:`
/// with its disk cache, behind the facade's album lookup; also under `/libraries/{lib}`.
///
/// A cached, fresh cover is answered on the event loop (the album → cover URL lookup is
/// remembered per library version; the bytes go out with `sendfile`, or from memory for a file
/// of at most 64 KiB: ``SmallFileBytes``); a miss, a stale copy or an unknown album moves to
/// the worker pool, which waits for the fetch up to `wait`.
///
/// `?size=N` asks for a sized variant (``CoverNegotiation``): a cached one of a fresh original
/// is answered on the event loop like an original; making one happens on the cover service's
/// variant threads while the worker waits (within the same `wait`). Variant responses carry
/// `Vary: Accept`; their `ETag` is the hash of the variant's own bytes.
struct CoverRoutes {
    let libraries: LibraryResolver
    let covers: any CoverSource
    let variants: any CoverVariantSource
    /// How long a request waits for an uncached cover before answering 504.
    let wait: Duration
    /// (library, album id) → its cover URL, current at that library's version.
    let coverURLs: RequestModelCache<Key, CoverLink>
    /// Small cached covers and variants, sent from memory (``SmallFileBytes``).
    let smallFiles = SmallFileBytes()

    struct Key: Hashable, Sendable {
        var library: LibraryID
        var album: AlbumID
    }

    struct CoverLink: Sendable {
        var url: String?
    }

    func register(into routes: inout RouterBuilder) {
        routes.addForEachLibrary(.get, "/albums/{id}/cover", fast: showCached, blocking: show)
        routes.addForEachLibrary(.delete, "/albums/{id}/cover", options: .workerPool, evict)
    }

    /// A cached, fresh cover of an album whose cover URL is known at the current version,
    /// from memory and the disk cache's index; nil for anything else (`show` handles it).
    func showCached(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse? {
        guard let facade = try libraries.loaded(context), let version = facade.knownVersion() else { return nil }
        let id = try RequestInput.albumID(context)
        let variant = try CoverNegotiation.variant(request)
        guard let link = coverURLs.current(Key(library: facade.library, album: id), version: version), let url = link.url
        else { return nil }
        if let variant {
            return variants.cachedVariant(variant, for: url).map { response($0, request: request, varies: true) }
        }
        guard case let .loaded(cover)? = covers.state(for: url), cover.freshUntil > Date() else { return nil }
        return response(cover, request: request)
    }

    /// Any cover request: it may wait for the album read and the upstream fetch.
    func show(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let variant = try CoverNegotiation.variant(request)
        // An original is looked up once more (the fast path may not have had the library
        // loaded); a variant is not: `variant(_:for:wait:)` serves a cached one itself, and a
        // second look would count its hits twice.
        if variant == nil, let cached = try showCached(request, context) { return cached }
        let facade = try libraries.facade(context)
        let id = try RequestInput.albumID(context)
        let version = try facade.currentVersion()
        let link = try coverURLs.value(Key(library: facade.library, album: id), version: version) {
            let (item, read) = try facade.versionedAlbum(id: id)
            return .init(value: CoverLink(url: item.album.coverUrl), version: read, cost: 64)
        }
        guard let url = link.url else {
            throw HTTPError(.notFound, detail: "Album \(id) has no coverUrl; set one with PATCH /albums/\(id).",
                            type: "urn:bluelibrary:problem:no-cover", title: "No cover")
        }
        let respondAsync = request.headers.tokens(for: "Prefer").contains("respond-async")
        let result: CoverResult
        do {
            if let variant {
                result = try variants.variant(variant, for: url, wait: respondAsync ? .zero : wait)
            } else {
                result = try covers.cover(for: url, wait: respondAsync ? .zero : wait)
            }
        } catch {
            throw Self.problem(error, url: url)
        }
        switch result {
        case let .ready(cover):
            return response(cover, request: request, varies: variant != nil)
        case .loading where respondAsync:
            var response = try JSONBody.response(["status": "loading", "coverUrl": url], status: .accepted)
            response.headers.set("Retry-After", "1")
            response.headers.set("Preference-Applied", "respond-async")
            return response
        case .loading:
            throw HTTPError(.gatewayTimeout, detail: "The cover is still being fetched from its upstream; retry shortly.",
                            type: "urn:bluelibrary:problem:cover-loading", title: "Cover still loading",
                            headers: ["Retry-After": "2"])
        }
    }

    func evict(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let facade = try libraries.facade(context)
        let id = try RequestInput.albumID(context)
        let item = try facade.album(id: id)
        if let url = item.album.coverUrl { covers.evict(url: url) }
        return HTTPResponse(status: .noContent)
    }

    /// The cached bytes: from the file with `sendfile`, from memory for a small file
    /// (``smallFiles``), or from memory when the disk could not take them. 304 when
    /// `If-None-Match` matches the content hash. `varies`: a variant negotiated by `Accept`
    /// (`Vary: Accept`).
    func response(_ cover: CachedCover, request: HTTPRequest, varies: Bool = false) -> HTTPResponse {
        let maxAge = max(0, Int(cover.freshUntil.timeIntervalSinceNow))
        var headers: HTTPHeaders = ["Content-Type": cover.mediaType, "ETag": cover.etag,
                                    "Cache-Control": "public, max-age=\(maxAge)"]
        if varies { headers.set("Vary", "Accept") }
        if let condition = request.headers["If-None-Match"], ETag.list(condition, matches: cover.etag) {
            headers.remove("Content-Type")
            return HTTPResponse(status: .notModified, headers: headers)
        }
        headers.set("Content-Type", cover.mediaType)
        switch cover.content {
        case let .file(path):
            if let bytes = smallFiles.bytes(ofFile: path, length: cover.length) { return HTTPResponse(headers: headers, body: .bytes(bytes)) }
            return HTTPResponse(headers: headers, body: .file(HTTPFileBody(path: path, length: cover.length)))
        case let .memory(bytes):
            return HTTPResponse(headers: headers, body: .bytes(bytes))
        }
    }

    /// The host of a cover URL, for problem details (never the whole URL).
    static func host(of url: String) -> String {
        URL(string: url)?.host ?? "its upstream"
    }

    /// What the upstream did, as a 502 (or 503 when the fetcher or the variant threads are
    /// saturated or stopping; 500 when the server could not encode a variant).
    static func problem(_ error: CoverError, url: String) -> HTTPError {
        let type = "urn:bluelibrary:problem:cover-\(error.reason.rawValue)"
        switch error.reason {
        case .unavailable:
            return HTTPError(.serviceUnavailable, detail: "Covers cannot be fetched right now: \(error.detail)", type: type,
                             title: "Cover fetcher unavailable", headers: ["Retry-After": "5"])
        case .variantsBusy:
            return HTTPError(.serviceUnavailable, detail: error.detail, type: type,
                             title: "Sized covers busy", headers: ["Retry-After": "2"])
        case .imagesUnavailable:
            return HTTPError(.serviceUnavailable, detail: error.detail + " Ask for the cover without size.", type: type,
                             title: "Sized covers unavailable", headers: ["Retry-After": "60"])
        case .variantEncodeFailed:
            return HTTPError(.internalServerError, detail: error.detail + " Ask without size, or in another format (Accept).",
                             type: type, title: "Sized cover could not be encoded")
        case .imageTooLarge, .imageUnreadable:
            return HTTPError(.badGateway, detail: error.detail + " Ask for the cover without size, or fix the image at \(Self.host(of: url)).",
                             type: type, title: "Cover cannot be scaled")
        default:
            var detail = "Fetching the cover failed: \(error.detail)"
            if let status = error.upstreamStatus { detail += " (upstream answered \(status))" }
            return HTTPError(.badGateway, detail: detail, type: type, title: "Cover upstream failed")
        }
    }
}
