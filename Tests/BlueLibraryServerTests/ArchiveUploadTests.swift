import BlueLibraryTestSupport
import Foundation
import HTTPServer
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// `PUT /archive` streams its body: the route starts on the head, the body goes to a file as it
/// arrives and is imported from there.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class ArchiveUploadTests {
    let app: BlueLibraryApp

    init() throws {
        app = try TestApp.make { $0.seed = false }
        app.start()
    }

    deinit { app.shutdown() }

    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// A valid archive of `count` albums (ids ascending), one per line.
    static func archive(albums count: Int) -> [UInt8] {
        var text = #"{"format":"bluelibrary.archive","formatVersion":1,"albums":["#
        for index in 0..<count {
            var suffix = [UInt8](repeating: 0, count: 6)
            var value = index
            for position in stride(from: 5, through: 0, by: -1) {
                suffix[position] = alphabet[value & 31]
                value >>= 5
            }
            let id = "01HZY8Q6V9T3X2K7M4N5" + String(decoding: suffix, as: UTF8.self)
            if index > 0 { text += ",\n" }
            text += #"{"id":"\#(id)","title":"Album \#(index)","artist":"Artist \#(index % 97)","year":1999,"#
                + #""createdAt":"2024-01-01T00:00:00.000Z","updatedAt":"2024-01-01T00:00:00.000Z"}"#
        }
        return Array((text + #"],"states":[{"client":"phone","currentAlbumIndex":1}]}"#).utf8)
    }

    @Test func aChunkedArchiveStreamsIntoTheImport() throws {
        let body = Self.archive(albums: 20_000)
        let client = try RawHTTPClient(port: app.port, receiveTimeout: 60)
        try client.send("PUT /archive HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        var offset = 0
        while offset < body.count {
            let n = min(50_000, body.count - offset)
            try client.send(Array((String(n, radix: 16) + "\r\n").utf8) + body[offset..<(offset + n)] + Array("\r\n".utf8))
            offset += n
        }
        try client.send("0\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 200, "\(response.text)")
        let summary = try response.json()
        #expect(summary["albumCount"] as? Int == 20_000 && summary["stateCount"] as? Int == 1)
        let page = try RawHTTPClient.request(port: app.port, path: "/albums?limit=1&offset=19999")
        #expect(page.text.contains("Album 19999"), "\(page.text)")
    }

    /// The route runs on the head: a refusal comes before the body is sent, not after a
    /// (here never sent) gigabyte was read.
    @Test func aWrongMediaTypeIsRefusedBeforeTheBodyArrives() throws {
        let client = try RawHTTPClient(port: app.port, receiveTimeout: 5)
        try client.send("PUT /archive HTTP/1.1\r\nHost: test\r\nContent-Type: text/plain\r\nContent-Length: 900000000\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 415)
        #expect(response.header("Connection") == "close")
    }

    @Test func aStreamedBodyHasTheFingerprintOfTheSameBodyWhole() {
        let body = Array(#"{"format":"bluelibrary.archive"}"#.utf8)
        let request = HTTPRequest(method: .put, target: "/archive", body: body)
        var streamed = IdempotencyGuard.Fingerprint(HTTPRequest(method: .put, target: "/archive"))
        streamed.add(Array(body[..<7]))
        streamed.add(Array(body[7...]))
        #expect(streamed.value == IdempotencyGuard.fingerprint(request))
    }

    /// The upload is hashed only when an Idempotency-Key asks for it: with a key, a repeat of
    /// the same archive replays the first answer without importing again, and the same key with
    /// another archive is refused; without one, every PUT imports.
    @Test func anIdempotencyKeyStillGuardsAStreamedImport() throws {
        func put(_ body: [UInt8], key: String?) throws -> RawHTTPClient.Response {
            var headers = ["Content-Type": "application/json"]
            if let key { headers["Idempotency-Key"] = key }
            return try RawHTTPClient.request(port: app.port, method: "PUT", path: "/archive", headers: headers, body: body)
        }
        let first = try put(Self.archive(albums: 300), key: "import-1")
        #expect(first.status == 200, "\(first.text)")
        let version = try #require(try first.json()["version"] as? Int)
        let again = try put(Self.archive(albums: 300), key: "import-1")
        #expect(again.status == 200)
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(try again.json()["version"] as? Int == version)
        let other = try put(Self.archive(albums: 299), key: "import-1")
        #expect(other.status == 422, "\(other.text)")
        #expect(other.text.contains("idempotency-key-reused"))
        let count = try RawHTTPClient.request(port: app.port, path: "/albums?limit=1&count=true").json()
        #expect(count["total"] as? Int == 300)
        let unkeyed = try put(Self.archive(albums: 300), key: nil)
        #expect(unkeyed.status == 200)
        #expect(unkeyed.header("Idempotent-Replayed") == nil)
        #expect(try unkeyed.json()["version"] as? Int == version + 1)
    }

    @Test func anInvalidAlbumLateInALargeArchiveChangesNothing() throws {
        let good = Self.archive(albums: 5_000)
        #expect(try RawHTTPClient.request(port: app.port, method: "PUT", path: "/archive",
                                          headers: ["Content-Type": "application/json"], body: good).status == 200)
        // Album 4,500 has no title: the batches before it were inserted, then rolled back.
        var text = String(decoding: Self.archive(albums: 6_000), as: UTF8.self)
        let range = try #require(text.range(of: #""title":"Album 4500","#))
        text.replaceSubrange(range, with: "")
        let bad = try RawHTTPClient.request(port: app.port, method: "PUT", path: "/archive",
                                            headers: ["Content-Type": "application/json"], body: Array(text.utf8))
        #expect(bad.status == 422)
        #expect(bad.text.contains("albums[4500].title"), "\(bad.text)")
        let count = try RawHTTPClient.request(port: app.port, path: "/albums?limit=1&count=true").json()
        #expect(count["total"] as? Int == 5_000)
    }
}
