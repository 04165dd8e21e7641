import Dispatch
import Essentials
import Foundation
import HTTPServer
import Synchronization

/// Image bytes the upstream serves: real signatures followed by filler.
enum Fixtures {
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 0x42, count: 1016)
    static let pngV2: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 0x43, count: 1016)
    static let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + Array(repeating: 0x11, count: 2044)
    static let html = Array("<!doctype html><html><body>Not found, but nicely</body></html>".utf8)

    static func png(size: Int, fill: UInt8) -> [UInt8] {
        Array(png.prefix(8)) + Array(repeating: fill, count: size - 8)
    }
}

/// A real HTTP upstream on 127.0.0.1 (an ``HTTPServer`` from the copied module) with routes
/// for every situation the fetcher must handle, counting the requests each path receives.
final class TestUpstream: Sendable {
    let server: HTTPServer
    private let hits = Mutex<[String: Int]>([:])
    /// Released by the test: `/held.png` answers (what `/etag.png` serves) only after it, or
    /// after 60 s so a failed test cannot hang the server.
    let release = DispatchSemaphore(value: 0)
    /// What `/etag.png` currently serves and its entity tag.
    let current = Mutex<(bytes: [UInt8], etag: String)>((Fixtures.png, "\"v1\""))
    /// Requests of `/concurrent/...` in progress now, and the most seen at once.
    let concurrency = Mutex<(now: Int, peak: Int)>((0, 0))
    /// How long `/coalesce.png` and `/slow.png` take.
    let delays = Mutex<(coalesce: Duration, slow: Duration)>((.milliseconds(400), .milliseconds(1500)))

    init() throws {
        var routes = RouterBuilder()
        let box = Weak()
        @Sendable func count(_ request: HTTPRequest, _ name: String? = nil) {
            box.upstream?.hits.withLock { $0[name ?? String(request.path), default: 0] += 1 }
        }
        @Sendable func image(_ bytes: [UInt8], type: String = "image/png", headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
            HTTPResponse(contentType: type, bytes: bytes, headers: headers)
        }
        routes.add(.get, "/cover.png") { request, _ in
            count(request)
            return image(Fixtures.png, headers: ["ETag": "\"c1\"", "Cache-Control": "max-age=60"])
        }
        routes.add(.get, "/photo.jpg") { request, _ in
            count(request)
            // A wrong Content-Type on purpose: the stored type comes from the bytes.
            return image(Fixtures.jpeg, type: "application/octet-stream")
        }
        routes.add(.get, "/sized/{name}") { request, context in
            count(request)
            let size = Int(context.parameters["name"]?.split(separator: "-").last ?? "") ?? 1000
            return image(Fixtures.png(size: size, fill: UInt8(truncatingIfNeeded: size)))
        }
        routes.add(.get, "/coalesce.png", options: .init(execution: .workerPool)) { request, _ in
            count(request)
            Thread.sleep(forTimeInterval: box.upstream?.delays.withLock { $0.coalesce.seconds } ?? 0)
            return image(Fixtures.png)
        }
        routes.add(.get, "/concurrent/{name}", options: .init(execution: .workerPool)) { request, _ in
            count(request, "/concurrent")
            box.upstream?.concurrency.withLock { $0.now += 1; $0.peak = max($0.peak, $0.now) }
            Thread.sleep(forTimeInterval: 0.1)
            box.upstream?.concurrency.withLock { $0.now -= 1 }
            return image(Fixtures.png)
        }
        routes.add(.get, "/slow.png", options: .init(execution: .workerPool)) { request, _ in
            count(request)
            Thread.sleep(forTimeInterval: box.upstream?.delays.withLock { $0.slow.seconds } ?? 0)
            return image(Fixtures.png)
        }
        routes.add(.get, "/error500") { request, _ in
            count(request)
            return HTTPResponse(status: .internalServerError, contentType: "text/plain", bytes: Array("boom".utf8))
        }
        routes.add(.get, "/missing.png") { request, _ in
            count(request)
            return HTTPResponse(status: .notFound, contentType: "text/plain", bytes: Array("no such cover".utf8))
        }
        routes.add(.get, "/loop") { request, _ in
            count(request)
            return HTTPResponse(status: HTTPStatus(code: 302), headers: ["Location": "/loop"])
        }
        routes.add(.get, "/chain/{n}") { request, context in
            count(request, "/chain")
            let n = Int(context.parameters["n"] ?? "") ?? 0
            return HTTPResponse(status: HTTPStatus(code: 301), headers: ["Location": "/chain/\(n + 1)"])
        }
        routes.add(.get, "/moved.png") { request, _ in
            count(request)
            return HTTPResponse(status: HTTPStatus(code: 307), headers: ["Location": "/cover.png"])
        }
        routes.add(.get, "/to-metadata") { request, _ in
            count(request)
            return HTTPResponse(
                status: HTTPStatus(code: 302), headers: ["Location": "http://169.254.169.254/latest/meta-data/"])
        }
        routes.add(.get, "/big.png") { request, _ in
            count(request)
            return image(Fixtures.png(size: 200 * 1024, fill: 7))
        }
        routes.add(.get, "/big-stream.png") { request, _ in
            count(request)
            var response = HTTPResponse(body: .stream(HTTPStreamBody(endsOnShutdown: true) { writer in
                let chunk = Fixtures.png(size: 16 * 1024, fill: 9)
                for _ in 0..<13 { writer.write(chunk) }
                writer.finish()
            }))
            response.headers.set("Content-Type", "image/png")
            return response
        }
        routes.add(.get, "/page.html") { request, _ in
            count(request)
            return image(Fixtures.html, type: "text/html")
        }
        routes.add(.get, "/fake.png") { request, _ in
            count(request)
            return image(Fixtures.html, type: "image/png")
        }
        routes.add(.get, "/dropped.png") { request, _ in
            count(request)
            var response = HTTPResponse(body: .stream(HTTPStreamBody(endsOnShutdown: true) { writer in
                writer.write(Fixtures.png(size: 4096, fill: 3))
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { writer.abort() }
            }))
            response.headers.set("Content-Type", "image/png")
            return response
        }
        routes.add(.get, "/held.png", options: .init(execution: .workerPool)) { request, _ in
            guard let upstream = box.upstream else { throw HTTPError(.internalServerError, detail: "gone") }
            count(request)
            _ = upstream.release.wait(timeout: .now() + 60)
            let (bytes, etag) = upstream.current.withLock { ($0.bytes, $0.etag) }
            return image(bytes, headers: ["ETag": etag])
        }
        routes.add(.get, "/etag.png") { request, _ in
            guard let upstream = box.upstream else { throw HTTPError(.internalServerError, detail: "gone") }
            let (bytes, etag) = upstream.current.withLock { ($0.bytes, $0.etag) }
            if request.headers["If-None-Match"] == etag {
                count(request, "/etag.png 304")
                return HTTPResponse(status: .notModified, headers: ["ETag": etag])
            }
            count(request, "/etag.png 200")
            return image(bytes, headers: ["ETag": etag, "Last-Modified": "Wed, 01 May 2024 12:00:00 GMT"])
        }
        server = try HTTPServer(
            configuration: .init(host: "127.0.0.1", port: 0, eventLoops: 1, workerThreads: 8), router: routes.build())
        box.upstream = self
        server.start()
    }

    var port: Int { server.port }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    func hits(_ path: String) -> Int { hits.withLock { $0[path] ?? 0 } }

    func stop() { server.shutdown(grace: .milliseconds(200)) }

    /// Lets the routes reach the upstream without a retain cycle through the router.
    private final class Weak: @unchecked Sendable {
        // @unchecked: written once before the server starts, then only read.
        weak var upstream: TestUpstream?
    }
}
