import HTTPServer
import Library
import Synchronization

/// The JSON body of a cached list page (`GET /albums`, `GET /views/{view}/albums`): rendered
/// when a GET loaded the page, or kept unrendered when a HEAD did, until the first GET that
/// sends it renders it once (under a lock: concurrent GETs of that page share the one
/// render).
///
/// A HEAD therefore never renders a list body. Its answer carries the page's headers (ETag,
/// `Cache-Control`, `Content-Type`, `Link`), read from the cached page or from the page read
/// for it; `Content-Length` only once the body has been rendered by a GET (RFC 9110 §9.3.2
/// and §8.6: a HEAD may omit a field whose value is only known by generating the content, and
/// must not state a length other than the GET's).
final class PageBody: Sendable {
    typealias Render = @Sendable () throws -> [UInt8]

    private enum State {
        case pending(Render)
        case rendered([UInt8])
    }

    private final class Deferred: Sendable {
        let state: Mutex<State>
        init(_ render: @escaping Render) { state = Mutex(.pending(render)) }
    }

    private let atLoad: [UInt8]?
    private let deferred: Deferred?

    /// A body rendered already.
    init(bytes: [UInt8]) {
        atLoad = bytes
        deferred = nil
    }

    /// A body `render` makes when first needed.
    init(deferred render: @escaping Render) {
        atLoad = nil
        deferred = Deferred(render)
    }

    /// The bytes if rendered; never renders (the event loop's path asks this).
    var bytes: [UInt8]? {
        if let atLoad { return atLoad }
        return deferred?.state.withLock { state in
            if case let .rendered(bytes) = state { return bytes }
            return nil
        }
    }

    /// The bytes, rendered now if they were not (a render that fails is tried again next time).
    func rendered() throws -> [UInt8] {
        if let atLoad { return atLoad }
        guard let deferred else { return [] }
        return try deferred.state.withLock { state in
            switch state {
            case let .rendered(bytes):
                return bytes
            case let .pending(render):
                let bytes = try render()
                state = .rendered(bytes)
                return bytes
            }
        }
    }

    /// What a page kept unrendered costs in the page cache: its albums' text and a fixed
    /// overhead per album, about what the rendered body will take.
    static func estimatedCost(of page: AlbumListPage) -> Int {
        page.items.reduce(256) { sum, item in
            let album = item.album
            return sum + 320 + album.title.utf8.count + album.artist.utf8.count + album.genre.utf8.count
                + (album.coverUrl?.utf8.count ?? 0) + (item.library?.rawValue.utf8.count ?? 0)
        }
    }

    /// The response of a list page: 200 with the body, or, for a HEAD, the same head without
    /// rendering — with `Content-Length` when the body is rendered already, without it when not.
    static func response(_ body: PageBody, request: HTTPRequest, headers: HTTPHeaders) throws -> HTTPResponse {
        if request.method == .head, body.bytes == nil {
            var headers = headers
            headers.set("Content-Type", "application/json")
            return HTTPResponse(status: .ok, headers: headers, body: .unknownLength)
        }
        return HTTPResponse(contentType: "application/json", bytes: try body.rendered(), headers: headers)
    }
}

/// Counts list bodies rendered (`bluelibrary_list_bodies_rendered_total`): a HEAD never moves
/// it, a GET moves it once per page read (not for pages served from memory).
final class PageRenders: Sendable {
    private let count = Atomic<Int>(0)

    /// Runs `render` and counts it.
    func render(_ render: () throws -> [UInt8]) rethrows -> [UInt8] {
        let bytes = try render()
        count.wrappingAdd(1, ordering: .relaxed)
        return bytes
    }

    var total: Int { count.load(ordering: .relaxed) }

    func register(in metrics: Metrics) {
        metrics.sampled("bluelibrary_list_bodies_rendered_total",
                        help: "List page bodies (GET /albums, GET /views/{view}/albums) rendered to JSON; a HEAD renders none.",
                        kind: .counter) { [self] in total }
    }
}
