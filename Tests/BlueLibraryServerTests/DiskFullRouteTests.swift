import BlueLibraryTestSupport
import Foundation
import Glibc
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// A full disk, through the routes (in process): with the data directory on a small tmpfs that fills up, writes get
/// 507 with a problem that says the disk is full, `/readyz` says so, reads go on, and writes
/// resume by themselves once space is freed. Skipped where a tmpfs cannot be mounted.
@Suite(.serialized, .timeLimit(.minutes(2)), .enabled(if: TmpfsVolume.canMount, "needs to mount a tmpfs (root in a container that allows it)"), .ownThreads)
struct DiskFullRouteTests {
    @Test func aFullDiskAnswers507AndReadyzSaysSoUntilSpaceReturns() throws {
        let volume = try TmpfsVolume(bytes: 8 << 20)
        let app = try TestApp.make {
            $0.dataDirectory = volume.path
            $0.diskReserveBytes = 32 << 20  // the default: on this volume, 1/16 of it
        }
        defer { app.shutdown() }  // never started: answered in process
        let routes = InProcessClient(app)
        func request(_ method: String, _ path: String, json: String? = nil) throws -> RawHTTPClient.Response {
            routes.request(method: method, path: path, headers: json == nil ? [:] : ["Content-Type": "application/json"],
                           body: Array((json ?? "").utf8))
        }
        let filler = try volume.fill(leaving: 300 << 10)
        var added = 0
        var refused: RawHTTPClient.Response?
        for step in 0..<2000 {
            let response = try request("POST", "/albums", json: #"{"title":"Album \#(step)","artist":"A"}"#)
            guard response.status == 201 else { refused = response; break }
            added += 1
        }
        let response = try #require(refused, "the volume never filled up")
        #expect(response.status == 507)
        let problem = try response.json()
        #expect(problem["type"] as? String == "urn:bluelibrary:problem:disk-full")
        #expect((problem["detail"] as? String)?.contains("disk is full") == true)
        let ready = try request("GET", "/readyz")
        #expect(ready.status == 200)
        #expect(try ready.json()["status"] as? String == "disk-full")
        // Reads go on and see every acknowledged album (5 seeded).
        #expect(try request("GET", "/albums?count=true&limit=1").json()["total"] as? Int == added + 5)
        // Space returns: the next write succeeds and readiness is back.
        try FileManager.default.removeItem(atPath: filler)
        #expect(try request("POST", "/albums", json: #"{"title":"After","artist":"A"}"#).status == 201)
        #expect(try request("GET", "/readyz").json()["status"] as? String == "ready")
    }
}
