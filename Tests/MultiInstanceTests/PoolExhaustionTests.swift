import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// The connection pool is bounded (`BLUELIBRARY_DATABASE_POOL_SIZE`): when every connection is
/// taken, a request waits a bounded time for one and then gets a clean 503 with Retry-After,
/// never a queue without limit; once a connection is free again, requests succeed.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct PoolExhaustionTests {
    /// An archive of `count` albums of about 3 KB each (long title, artist, genre and cover
    /// URL): few rows to import, yet an export (~12 MB for 4,000) that cannot hide in socket
    /// buffers and the export window.
    static func archive(count: Int) -> [UInt8] {
        let padding = String(repeating: "x", count: 440)
        let path = String(repeating: "cover/", count: 240)
        var json = #"{"format":"bluelibrary.archive","formatVersion":1,"albums":["#
        for number in 0..<count {
            if number > 0 { json += "," }
            let id = "01J" + String(repeating: "0", count: 23 - String(number).count) + String(number)
            json += #"{"id":"\#(id)","title":"Album \#(number) \#(padding)","artist":"Artist \#(number % 97) \#(padding)","genre":"Genre \#(padding)","year":1999,"coverUrl":"https://covers.example.com/\#(path)\#(number).png","createdAt":"2024-05-01T12:00:00.000Z","updatedAt":"2024-05-01T12:00:00.000Z"}"#
        }
        return Array((json + "],\"states\":[]}").utf8)
    }

    @Test func exhaustedPoolIs503WithRetryAfter() throws {
        let url = try PostgresServer.shared().makeDatabase()
        let data = try TemporaryDirectory(prefix: "bluelibrary-instance")
        let environment = InstanceCluster.baseEnvironment(databaseURL: url).merging(["BLUELIBRARY_DATABASE_POOL_SIZE": "1"]) { $1 }
        let instance = try ServerProcess(environment: environment, dataDirectory: data.path)
        let imported = try RawHTTPClient.request(port: instance.port, method: "PUT", path: "/archive",
                                                 headers: ["Content-Type": "application/json"], body: Self.archive(count: 4_000),
                                                 receiveTimeout: 90)
        try #require(imported.status == 200, "\(imported.statusLine) \(imported.text.prefix(300))")

        // An export holds its read snapshot, the pool's one connection, from its first byte to
        // its last; this client reads its first bytes and then nothing, so the export waits.
        var stalled: RawHTTPClient? = try RawHTTPClient(port: instance.port, receiveBufferSize: 4096)
        try stalled?.send("GET /archive HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(stalled?.waitForBytes(1) == true)

        // Meanwhile a request that needs the database waits its bounded time, then is refused.
        var number = 0
        var refused: RawHTTPClient.Response?
        #expect(eventually(timeout: .seconds(20)) {
            number += 1
            let response = try? RawHTTPClient.request(port: instance.port, path: "/albums?limit=5&nc=\(number)", receiveTimeout: 15)
            if response?.status == 503 { refused = response }
            return refused != nil
        }, "never refused while the export holds the pool's connection\n\(instance.logLines().suffix(10).joined(separator: "\n"))")
        #expect(Int(refused?.header("Retry-After") ?? "") ?? 0 >= 1)
        #expect(refused?.header("Content-Type") == "application/problem+json")
        #expect((refused.flatMap { try? $0.json() })?["type"] as? String == "urn:bluelibrary:problem:database-unavailable")
        #expect(try RawHTTPClient.request(port: instance.port, path: "/healthz").status == 200)

        // The client goes away; the export ends and gives the connection back.
        stalled = nil
        #expect(eventually(timeout: .seconds(30), pollingEvery: .milliseconds(50)) {
            number += 1
            return (try? RawHTTPClient.request(port: instance.port, path: "/albums?limit=5&nc=\(number)", receiveTimeout: 15))?.status == 200
        }, "the pool's connection never came back")
        #expect(instance.process.isRunning)
    }
}
