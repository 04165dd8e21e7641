import BlueLibraryTestSupport
import Dispatch
import Foundation
import HTTPServer
import HTTPTestSupport
import Library
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryServer
@testable import Covers

/// `GET /albums/{id}/cover?size=N` against a real upstream HTTP server on 127.0.0.1 serving
/// images the test makes; every variant is decoded again with the `vips` command.
@Suite(.serialized, .timeLimit(.minutes(4)), .ownThreads) final class CoverVariantRouteTests {
    /// What the upstream serves, by file name.
    final class Shelf: Sendable {
        let files = Mutex<[String: [UInt8]]>([:])
        /// Names answered only after `release` is signalled (or 60 s), and requests per name.
        let held = Mutex<Set<String>>([])
        let release = DispatchSemaphore(value: 0)
        let requests = Mutex<[String: Int]>([:])
        func withLock<T>(_ body: (inout [String: [UInt8]]) -> T) -> T { files.withLock { body(&$0) } }
    }
    let images: Shelf
    let upstream: HTTPServer
    let dataDirectory = TestApp.temporaryDirectory()
    let app: BlueLibraryApp

    init() throws {
        var routes = RouterBuilder()
        let images = Shelf()
        self.images = images
        routes.add(.get, "/img/{name}", options: .workerPool) { _, context in
            let name = try context.parameter("name")
            images.requests.withLock { $0[name, default: 0] += 1 }
            if images.held.withLock({ $0.contains(name) }) { _ = images.release.wait(timeout: .now() + 60) }
            guard let bytes = images.withLock({ $0[name] }) else { throw HTTPError(.notFound, detail: "no \(name)") }
            return HTTPResponse(contentType: "application/octet-stream", bytes: bytes)
        }
        upstream = try HTTPServer(configuration: .init(host: "127.0.0.1", port: 0, eventLoops: 1, workerThreads: 4), router: routes.build())
        upstream.start()
        let directory = dataDirectory
        app = try TestApp.make { config in
            config.seed = false
            config.dataDirectory = directory
            config.coverAllow = "127.0.0.1"
            config.coverWait = .seconds(30)
        }
        app.start()
    }

    deinit {
        app.shutdown()
        upstream.shutdown(grace: .seconds(1))
    }

    /// An album (in `library`, when given) whose cover is `bytes`, served by the upstream as `name`.
    func album(_ name: String, _ bytes: [UInt8], library: String? = nil) throws -> String {
        images.withLock { $0[name] = bytes }
        let body = #"{"title": "Low", "artist": "David Bowie", "coverUrl": "http://127.0.0.1:\#(upstream.port)/img/\#(name)"}"#
        let response = try RawHTTPClient.request(
            port: app.port, method: "POST", path: (library.map { "/libraries/\($0)" } ?? "") + "/albums",
            headers: ["Content-Type": "application/json"], body: Array(body.utf8))
        #expect(response.status == 201, "\(response.text)")
        return try #require(response.json()["id"] as? String)
    }

    func get(_ path: String, accept: String? = nil, headers: [String: String] = [:], method: String = "GET") throws -> RawHTTPClient.Response {
        var headers = headers
        if let accept { headers["Accept"] = accept }
        return try RawHTTPClient.request(port: app.port, method: method, path: path, headers: headers, receiveTimeout: 60)
    }

    @Test func everySizeAndFormatWithETagsVaryAnd304() throws {
        let id = try album("photo.jpg", try TestImages.photo(width: 1500, height: 1000))
        let avif = CoverVariantFormat.canWriteAVIF
        let accepts: [(String?, String, String)] = [
            (nil, "image/jpeg", "jpegload"),
            ("image/webp,*/*", "image/webp", "webpload"),
            ("image/avif,image/webp;q=0.9,*/*;q=0.8", avif ? "image/avif" : "image/webp", avif ? "heifload" : "webpload"),
            ("image/avif;q=0.5,image/webp", "image/webp", "webpload"),
            ("image/webp;q=0, image/*", "image/jpeg", "jpegload"),
        ]
        for size in CoverVariant.allowedSizes {
            for (accept, type, loader) in accepts {
                let path = "/albums/\(id)/cover?size=\(size)"
                let response = try get(path, accept: accept)
                #expect(response.status == 200, "\(size) \(accept ?? "-"): \(response.text.prefix(300))")
                #expect(response.header("Content-Type") == type, "\(size) \(accept ?? "-")")
                #expect(response.header("Vary") == "Accept")
                #expect(response.header("Cache-Control")?.hasPrefix("public, max-age=") == true)
                let decoded = try TestImages.inspect(response.body)
                #expect(decoded.loader.hasPrefix(loader))
                #expect((decoded.width, decoded.height) == (size, (size * 2 + 1) / 3), "\(size) \(type)")
                let etag = try #require(response.header("ETag"))
                let again = try get(path, accept: accept, headers: ["If-None-Match": etag])
                #expect(again.status == 304 && again.body.isEmpty && again.header("Vary") == "Accept")
                let head = try get(path, accept: accept, method: "HEAD")
                #expect(head.status == 200 && head.body.isEmpty && head.header("Content-Length") == String(response.body.count))
                #expect(head.header("ETag") == etag)
            }
        }
        // Without size: the original bytes, as before.
        let original = try get("/albums/\(id)/cover", accept: "image/webp")
        #expect(original.body == images.withLock { $0["photo.jpg"] } && original.header("Vary") == nil)
    }

    @Test func transparencyGivesPNGAndLibrariesHaveTheRouteToo() throws {
        _ = try RawHTTPClient.request(port: app.port, method: "POST", path: "/libraries",
                                      headers: ["Content-Type": "application/json"], body: Array(#"{"id": "vinyl"}"#.utf8))
        let id = try album("alpha.png", try TestImages.photo(width: 400, height: 200, fileExtension: "png", alpha: true), library: "vinyl")
        let response = try get("/libraries/vinyl/albums/\(id)/cover?size=128")
        #expect(response.status == 200, "\(response.text)")
        #expect(response.header("Content-Type") == "image/png")
        let decoded = try TestImages.inspect(response.body)
        #expect((decoded.width, decoded.height, decoded.bands) == (128, 64, 4))
    }

    @Test func sizesOutsideTheSetAre400ListingThem() throws {
        let id = try album("list.jpg", try TestImages.photo(width: 300, height: 300))
        for size in ["100", "0", "-64", "abc", "", "99999999999999999999"] {
            let response = try get("/albums/\(id)/cover?size=\(size)")
            #expect(response.status == 400, "size=\(size)")
            #expect(response.header("Content-Type") == "application/problem+json")
            let problem = try response.json()
            #expect((problem["detail"] as? String)?.contains("64, 128, 256, 512, 1024") == true, "\(problem)")
            #expect((problem["errors"] as? [[String: Any]])?.first?["field"] as? String == "size")
        }
    }

    /// 50 threads start together (not `concurrentPerform`, whose width is the CPU count); the
    /// upstream holds the original until all 50 have sent their request.
    @Test func fiftyConcurrentRequestsMakeOneVariant() throws {
        images.held.withLock { _ = $0.insert("popular.jpg") }
        let id = try album("popular.jpg", try TestImages.photo(width: 1500, height: 1500))
        let statuses = Mutex<[Int]>([])
        let sent = Atomic<Int>(0)
        let port = app.port
        let start = DispatchGroup()
        start.enter()
        let done = DispatchGroup()
        for _ in 0..<50 {
            done.enter()
            Thread {
                start.wait()
                sent.wrappingAdd(1, ordering: .relaxed)
                let status = (try? RawHTTPClient.request(port: port, path: "/albums/\(id)/cover?size=256", headers: ["Accept": "image/webp"],
                                                         receiveTimeout: 90).status) ?? -1
                statuses.withLock { $0.append(status) }
                done.leave()
            }.start()
        }
        start.leave()
        #expect(eventually(timeout: .seconds(30)) { sent.load(ordering: .relaxed) == 50 && images.requests.withLock { $0["popular.jpg"] } == 1 })
        #expect(statuses.withLock { $0 }.isEmpty, "nobody is answered before the original arrives")
        images.release.signal()
        done.wait()
        #expect(statuses.withLock { $0 }.count == 50 && statuses.withLock { $0 }.allSatisfy { $0 == 200 }, "\(statuses.withLock { $0 })")
        #expect(app.covers.statistics.variantsMade == 1)
        #expect(images.requests.withLock { $0["popular.jpg"] } == 1, "one upstream fetch")
        let metrics = try get("/metrics").text
        #expect(metrics.contains(#"bluelibrary_cover_variants_total{outcome="made"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"bluelibrary_cover_variants_total{outcome="failed"} 0"#))
    }

    @Test func deletingTheCoverDeletesItsVariants() throws {
        let id = try album("gone.jpg", try TestImages.photo(width: 800, height: 800))
        #expect(try get("/albums/\(id)/cover?size=64").status == 200)
        #expect(try get("/albums/\(id)/cover?size=512", accept: "image/webp").status == 200)
        #expect(app.covers.statistics.cachedCovers == 1 && app.covers.statistics.cachedVariants == 2)
        #expect(try get("/albums/\(id)/cover", method: "DELETE").status == 204)
        #expect(app.covers.statistics.cachedCovers == 0 && app.covers.statistics.cachedVariants == 0)
        images.withLock { $0["gone.jpg"] = try? TestImages.photo(width: 800, height: 400) }
        let remade = try get("/albums/\(id)/cover?size=64")
        #expect(try TestImages.inspect(remade.body).height == 32, "made from the new original")
        #expect(app.covers.statistics.variantsMade == 3)
    }

    @Test func unusualCoversComeOutUprightFirstFrameSRGBAndWithoutMetadata() throws {
        let frames: [TestImages.RGB] = [(220, 20, 20), (20, 220, 20)]
        let cases: [(String, [UInt8], (Int, Int))] = [
            ("anim.gif", TestImages.animatedGIF(width: 300, height: 200, frames: frames), (128, 85)),
            ("anim.webp", try TestImages.animatedWebP(width: 300, height: 200, frames: frames), (128, 85)),
            ("cmyk.jpg", try TestImages.cmykJPEG(width: 300, height: 200, colour: (220, 20, 20)), (128, 85)),
            ("deep.png", try TestImages.png16(width: 300, height: 200, samples: (56_540, 5_140, 5_140)), (128, 85)),
            ("turned.jpg", try TestImages.jpegWithEXIF(width: 300, height: 200, orientation: 6, colour: (220, 20, 20)), (85, 128)),
        ]
        for (name, bytes, dimensions) in cases {
            let id = try album(name, bytes)
            for accept in ["image/webp", "image/jpeg"] {
                let response = try get("/albums/\(id)/cover?size=128", accept: accept)
                #expect(response.status == 200, "\(name): \(response.text.prefix(200))")
                let decoded = try TestImages.inspect(response.body)
                #expect((decoded.width, decoded.height) == dimensions, "\(name) as \(accept)")
                #expect(decoded.bands == 3, "\(name): 8-bit sRGB")
                #expect(!decoded.fields.contains { $0.hasPrefix("exif") || $0 == "icc-profile-data" }, "\(name): \(decoded.fields)")
                #expect(response.body.firstRange(of: Array(TestImages.exifMarker.utf8)) == nil)
                // Red: the first frame, CMYK converted, 16-bit samples scaled (56540/257 = 220).
                let pixel = try TestImages.pixel(response.body, x: dimensions.0 / 2, y: dimensions.1 / 2)
                #expect(pixel[0] > 170 && pixel[1] < 80 && pixel[2] < 80, "\(name) as \(accept): \(pixel)")
            }
        }
    }

    @Test func thePixelLimitIsTheServersSetting() throws {
        let strict = try TestApp.make { config in
            config.seed = false
            config.dataDirectory = TestApp.temporaryDirectory()
            config.coverAllow = "127.0.0.1"
            config.coverMaxPixels = 1_000_000
        }
        strict.start()
        defer { strict.shutdown() }
        images.withLock { $0["big.jpg"] = try? TestImages.photo(width: 1500, height: 1000) }
        let body = #"{"title": "Big", "artist": "B", "coverUrl": "http://127.0.0.1:\#(upstream.port)/img/big.jpg"}"#
        let created = try RawHTTPClient.request(port: strict.port, method: "POST", path: "/albums",
                                                headers: ["Content-Type": "application/json"], body: Array(body.utf8))
        let id = try #require(created.json()["id"] as? String)
        let refused = try RawHTTPClient.request(port: strict.port, path: "/albums/\(id)/cover?size=64", receiveTimeout: 60)
        #expect(refused.status == 502)
        #expect(refused.text.contains("1500 x 1000") && refused.text.contains("1000000"), "\(refused.text)")
    }

    /// Variant failures the original is not to blame for have problems of their own.
    @Test func variantProblemsSayWhatFailed() {
        let url = "http://covers.example/a.png"
        let busy = CoverRoutes.problem(CoverError(.variantsBusy, detail: "Too many."), url: url)
        #expect(busy.status == .serviceUnavailable && busy.headers["Retry-After"] != nil)
        #expect(busy.type == "urn:bluelibrary:problem:cover-variants-busy" && busy.title != "Cover fetcher unavailable")
        let noLibrary = CoverRoutes.problem(CoverError(.imagesUnavailable, detail: "libvips did not start."), url: url)
        #expect(noLibrary.status == .serviceUnavailable && noLibrary.title == "Sized covers unavailable")
        let encoder = CoverRoutes.problem(CoverError(.variantEncodeFailed, detail: "The sized cover could not be encoded by the server: no AV1 encoder."), url: url)
        #expect(encoder.status == .internalServerError && encoder.type == "urn:bluelibrary:problem:cover-variant-encode-failed")
        #expect(!encoder.detail.contains("corrupt") && !encoder.detail.contains("truncated"), "\(encoder.detail)")
    }

    @Test func hostileCoversAre502WithAReasonAndNothingIsCached() throws {
        // Reset this process's peak RSS (VmHWM), so the check below sees only these requests.
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        let before = Self.statusKilobytes("VmRSS:")
        let cases: [(String, [UInt8], String)] = [
            ("bomb.jpg", try TestImages.bomb(fileExtension: "jpg"), "cover-image-too-large"),
            ("bomb.png", try TestImages.bomb(fileExtension: "png"), "cover-image-too-large"),
            ("bomb.gif", try TestImages.bomb(fileExtension: "gif"), "cover-image-too-large"),
            ("cut.jpg", TestImages.truncated(try TestImages.photo(width: 1000, height: 1000)), "cover-image-unreadable"),
            ("bad.png", try TestImages.corruptPNG(), "cover-image-unreadable"),
        ]
        for (name, bytes, type) in cases {
            let id = try album(name, bytes)
            let response = try get("/albums/\(id)/cover?size=256", accept: "image/webp")
            #expect(response.status == 502, "\(name): \(response.text)")
            let problem = try response.json()
            #expect(problem["type"] as? String == "urn:bluelibrary:problem:\(type)", "\(name): \(problem)")
            if type.hasSuffix("too-large") { #expect((problem["detail"] as? String)?.contains("30000 x 30000") == true) }
            // Asked again: refused again from memory (no bytes cached, not decoded again), and the
            // original is still served as it came.
            let again = try get("/albums/\(id)/cover?size=256", accept: "image/webp")
            #expect(again.status == 502 && (try? again.json()["type"] as? String) == "urn:bluelibrary:problem:\(type)")
            #expect(try get("/albums/\(id)/cover").body == bytes)
        }
        #expect(app.covers.statistics.variantsMade == 0)
        #expect(app.covers.statistics.variantFailures == cases.count, "each failed once, then was remembered")
        #expect(app.covers.statistics.cachedCovers == cases.count, "the originals only")
        // Decoding the PNG or GIF bomb (30000 x 30000, 3 or 4 bands) would take 2.7 GB or more; the peak
        // grew far less (the bound leaves room for other suites running in this process meanwhile).
        if let before, let peak = Self.statusKilobytes("VmHWM:") {
            #expect(peak - before < 800 * 1024, "peak RSS grew from \(before) kB to \(peak) kB")
        }
    }

    /// A line of /proc/self/status (`VmRSS:`, `VmHWM:`), in kB.
    static func statusKilobytes(_ field: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) })
        else { return nil }
        return Int(line.split(separator: " ").dropFirst().first ?? "")
    }
}
