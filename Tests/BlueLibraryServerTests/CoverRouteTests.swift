import BlueLibraryTestSupport
import Foundation
import HTTPServer
import HTTPTestSupport
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryServer

/// `GET/DELETE /albums/{id}/cover` against a real upstream HTTP server on 127.0.0.1.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class CoverRouteTests {
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 100 * 1024)

    /// Upstream requests by file name.
    final class Hits: Sendable {
        let counts = Mutex<[String: Int]>([:])
        func withLock<T>(_ body: (inout [String: Int]) -> T) -> T { counts.withLock { body(&$0) } }
    }
    let hits = Hits()
    let upstream: HTTPServer
    let dataDirectory = TestApp.temporaryDirectory()
    var app: BlueLibraryApp

    init() throws {
        var routes = RouterBuilder()
        let hits = self.hits
        routes.add(.get, "/img/{name}", options: .workerPool) { _, context in
            let name = try context.parameter("name")
            hits.withLock { $0[name, default: 0] += 1 }
            switch name {
            case "broken.png": throw HTTPError(.internalServerError, detail: "upstream broke")
            case "slow.png": usleep(1_500_000)
            default: break
            }
            return HTTPResponse(contentType: "image/png", bytes: Self.png)
        }
        upstream = try HTTPServer(configuration: .init(host: "127.0.0.1", port: 0, eventLoops: 1, workerThreads: 4), router: routes.build())
        upstream.start()
        app = try Self.makeApp(dataDirectory)
        app.start()
    }

    deinit {
        app.shutdown()
        upstream.shutdown(grace: .seconds(1))
    }

    static func makeApp(_ directory: String, allow: String = "127.0.0.1", allowFromSettings: Bool = false) throws -> BlueLibraryApp {
        try TestApp.make { config in
            config.seed = false
            config.dataDirectory = directory
            config.coverAllow = allow
            config.coverAllowFromSettings = allowFromSettings
            config.coverWait = .milliseconds(800)
        }
    }

    func addAlbum(cover: String?) throws -> String {
        let coverField = cover.map { #", "coverUrl": "\#($0)""# } ?? ""
        let body = #"{"title": "Low", "artist": "David Bowie"\#(coverField)}"#
        let response = try RawHTTPClient.request(port: app.port, method: "POST", path: "/albums",
                                                 headers: ["Content-Type": "application/json"], body: Array(body.utf8))
        #expect(response.status == 201)
        return try #require(response.json()["id"] as? String)
    }

    func url(_ name: String) -> String { "http://127.0.0.1:\(upstream.port)/img/\(name)" }

    @Test func coverIsFetchedOnceThenServedFromTheCacheEvenAfterARestart() throws {
        let id = try addAlbum(cover: url("low.png"))
        let first = try RawHTTPClient.request(port: app.port, path: "/albums/\(id)/cover")
        #expect(first.status == 200)
        #expect(first.body == Self.png)
        #expect(first.header("Content-Type") == "image/png")
        #expect(first.header("Cache-Control")?.hasPrefix("public, max-age=") == true)
        let tag = try #require(first.header("ETag"))
        #expect(try RawHTTPClient.request(port: app.port, path: "/albums/\(id)/cover", headers: ["If-None-Match": tag]).status == 304)
        let head = try RawHTTPClient.request(port: app.port, method: "HEAD", path: "/albums/\(id)/cover")
        #expect(head.status == 200 && head.header("Content-Length") == String(Self.png.count))
        #expect(hits.withLock { $0["low.png"] } == 1, "the prefetch on add and every request share one fetch")

        // Restart with the upstream gone: the cover comes from disk.
        app.shutdown()
        upstream.shutdown(grace: .seconds(1))
        app = try Self.makeApp(dataDirectory)
        app.start()
        let cached = try RawHTTPClient.request(port: app.port, path: "/albums/\(id)/cover")
        #expect(cached.status == 200)
        #expect(cached.body == Self.png)
    }

    @Test func concurrentRequestsForOneUncachedCoverMakeOneUpstreamFetch() throws {
        let id = try addAlbum(cover: nil)
        _ = try RawHTTPClient.request(port: app.port, method: "PATCH", path: "/albums/\(id)",
                                      headers: ["Content-Type": "application/merge-patch+json"],
                                      body: Array(#"{"coverUrl": "\#(url("many.png"))"}"#.utf8))
        let group = DispatchGroup()
        let statuses = Mutex<[Int]>([])
        let port = app.port
        for _ in 0..<40 {
            DispatchQueue.global().async(group: group) {
                let status = (try? RawHTTPClient.request(port: port, path: "/albums/\(id)/cover").status) ?? -1
                statuses.withLock { $0.append(status) }
            }
        }
        group.wait()
        #expect(statuses.withLock { $0 }.allSatisfy { $0 == 200 })
        #expect(hits.withLock { $0["many.png"] } == 1)
    }

    @Test func missingBlockedFailingAndSlowCoversSayWhatHappened() throws {
        let bare = try addAlbum(cover: nil)
        #expect(try RawHTTPClient.request(port: app.port, path: "/albums/\(bare)/cover").status == 404)

        let broken = try addAlbum(cover: url("broken.png"))
        let failed = try RawHTTPClient.request(port: app.port, path: "/albums/\(broken)/cover")
        #expect(failed.status == 502)
        #expect(failed.text.contains("500"))

        let slow = try addAlbum(cover: url("slow.png"))
        let timedOut = try RawHTTPClient.request(port: app.port, path: "/albums/\(slow)/cover")
        #expect(timedOut.status == 504)
        #expect(timedOut.header("Retry-After") != nil)

        let another = try addAlbum(cover: url("slow.png?async"))
        let accepted = try RawHTTPClient.request(port: app.port, path: "/albums/\(another)/cover", headers: ["Prefer": "respond-async"])
        // Its prefetch started on POST and the upstream takes 1.5 s: still loading.
        #expect(accepted.status == 202)
        #expect(accepted.header("Preference-Applied") == "respond-async")
        #expect(accepted.header("Retry-After") != nil)
    }

    @Test func internalAddressesAreRefusedWithoutTheAllowList() throws {
        app.shutdown()
        app = try Self.makeApp(TestApp.temporaryDirectory(), allow: "")
        app.start()
        for target in [url("low.png"), "http://169.254.169.254/latest/meta-data/cover.png"] {
            let id = try addAlbum(cover: target)
            let refused = try RawHTTPClient.request(port: app.port, path: "/albums/\(id)/cover")
            #expect(refused.status == 502)
            #expect(refused.text.contains("blocked-address"), "\(refused.text)")
        }
        #expect(hits.withLock { $0["low.png"] } == nil, "nothing reached the upstream")
    }

    func patchSettings(_ json: String) throws -> RawHTTPClient.Response {
        try RawHTTPClient.request(port: app.port, method: "PATCH", path: "/settings",
                                  headers: ["Content-Type": "application/merge-patch+json"], body: Array(json.utf8))
    }

    /// In the default, unlocked setup an anonymous PATCH must not open loopback (or cloud
    /// metadata); refusals do not say what an internal name resolves to.
    @Test func anonymousSettingsCannotWidenTheAddressGuard() throws {
        app.shutdown()
        app = try Self.makeApp(TestApp.temporaryDirectory(), allow: "")
        app.start()
        let subscriber = try RawHTTPClient(port: app.port, receiveTimeout: 5)
        try subscriber.send("GET /events HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(try subscriber.readResponse(isHead: true).status == 200)

        for wide in [#"["0.0.0.0/0"]"#, #"["::/0"]"#, #"["127.0.0.1"]"#, #"["localhost"]"#] {
            let patch = try patchSettings(#"{"covers": {"allowList": \#(wide)}}"#)
            #expect(patch.status == 422, "\(wide): \(patch.text)")
            #expect(patch.text.contains("BLUELIBRARY_COVER_ALLOW"), "\(patch.text)")
        }
        let id = try addAlbum(cover: "http://localhost:\(upstream.port)/img/wide.png")
        let refused = try RawHTTPClient.request(port: app.port, path: "/albums/\(id)/cover")
        #expect(refused.status == 502)
        #expect(refused.text.contains("blocked-address"), "\(refused.text)")
        #expect(!refused.text.contains("127.0.0.1") && !refused.text.contains("::1"), "the 502 names the resolved address: \(refused.text)")
        var received = ""
        while !received.contains("event: cover.failed") {
            guard let chunk = try subscriber.readChunk() else { break }
            received += String(decoding: chunk, as: UTF8.self)
        }
        #expect(received.contains("event: cover.failed"))
        #expect(!received.contains("127.0.0.1") && !received.contains("::1"), "cover.failed names the resolved address: \(received)")
        #expect(hits.withLock { $0["wide.png"] } == nil, "nothing reached the upstream")
    }

    /// With the environment open to loopback, the setting can close part of it.
    @Test func theSettingsAllowListNarrowsTheEnvironment() throws {
        app.shutdown()
        app = try Self.makeApp(TestApp.temporaryDirectory(), allow: "127.0.0.0/8")
        app.start()
        #expect(try patchSettings(#"{"covers": {"allowList": ["127.0.0.2"]}}"#).status == 200)
        let id = try addAlbum(cover: url("narrowed.png"))
        let refused = try RawHTTPClient.request(port: app.port, path: "/albums/\(id)/cover")
        #expect(refused.status == 502)
        #expect(refused.text.contains("blocked-address"), "\(refused.text)")
        #expect(try patchSettings(#"{"covers": {"allowList": null}}"#).status == 200)
        #expect(try RawHTTPClient.request(port: app.port, method: "DELETE", path: "/albums/\(id)/cover").status == 204)
        #expect(try RawHTTPClient.request(port: app.port, path: "/albums/\(id)/cover").status == 200)
    }

    /// `BLUELIBRARY_COVER_ALLOW_FROM_SETTINGS=on`: the operator lets the setting open addresses.
    @Test func theSettingsAllowListOpensAddressesWithoutARestart() throws {
        app.shutdown()
        let directory = TestApp.temporaryDirectory()
        app = try Self.makeApp(directory, allow: "", allowFromSettings: true)
        app.start()
        let id = try addAlbum(cover: url("opened.png"))
        let refused = try RawHTTPClient.request(port: app.port, path: "/albums/\(id)/cover")
        #expect(refused.status == 502)
        #expect(refused.text.contains("blocked-address"), "\(refused.text)")

        let patch = try RawHTTPClient.request(
            port: app.port, method: "PATCH", path: "/settings", headers: ["Content-Type": "application/merge-patch+json"],
            body: Array(#"{"covers": {"allowList": ["127.0.0.1"]}}"#.utf8))
        #expect(patch.status == 200, "\(patch.text)")
        // The refusal is remembered for a while: evict it, as an operator would after changing the list.
        #expect(try RawHTTPClient.request(port: app.port, method: "DELETE", path: "/albums/\(id)/cover").status == 204)
        let fetched = try RawHTTPClient.request(port: app.port, path: "/albums/\(id)/cover")
        #expect(fetched.status == 200)
        #expect(fetched.body == Self.png)

        // A bad entry is refused as a whole; the stored list survives a restart.
        let bad = try RawHTTPClient.request(
            port: app.port, method: "PATCH", path: "/settings", headers: ["Content-Type": "application/merge-patch+json"],
            body: Array(#"{"covers": {"allowList": ["127.0.0.1", "not/a/host"]}}"#.utf8))
        #expect(bad.status == 422)
        #expect(bad.text.contains("covers.allowList[1]"), "\(bad.text)")
        app.shutdown()
        app = try Self.makeApp(directory, allow: "", allowFromSettings: true)
        app.start()
        let other = try addAlbum(cover: url("restarted.png"))
        #expect(try RawHTTPClient.request(port: app.port, path: "/albums/\(other)/cover").status == 200)
    }

    @Test func deleteEvictsSoTheNextRequestFetchesAgain() throws {
        let id = try addAlbum(cover: url("evict.png"))
        #expect(try RawHTTPClient.request(port: app.port, path: "/albums/\(id)/cover").status == 200)
        #expect(try RawHTTPClient.request(port: app.port, method: "DELETE", path: "/albums/\(id)/cover").status == 204)
        #expect(try RawHTTPClient.request(port: app.port, path: "/albums/\(id)/cover").status == 200)
        #expect(hits.withLock { $0["evict.png"] } == 2)
    }

    @Test func coverLoadedAndFailedArePublishedAsEvents() throws {
        let subscriber = try RawHTTPClient(port: app.port, receiveTimeout: 5)
        try subscriber.send("GET /events HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(try subscriber.readResponse(isHead: true).status == 200)
        _ = try addAlbum(cover: url("event.png"))
        _ = try addAlbum(cover: url("broken.png"))
        var received = ""
        while !(received.contains("event: cover.loaded") && received.contains("event: cover.failed")) {
            guard let chunk = try subscriber.readChunk() else { break }
            received += String(decoding: chunk, as: UTF8.self)
        }
        #expect(received.contains("event: cover.loaded"))
        #expect(received.contains("event: cover.failed"))
        #expect(received.contains(#""reason":"upstream-status""#))
    }
}
