#if canImport(Glibc)
import Essentials
import Glibc
#endif
import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import Library
import TestThreads
import Testing

/// Cursors as a hostile client sends them, against the real executable (a trap would kill it,
/// which an in-process test could not survive).
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct HostileCursorTests {
    /// A cursor with a forgeable seal: FNV-1a 64 over a salt that is in the public source, then
    /// the payload. Anyone could make one, so the server must refuse it.
    static func forgedWithPublicSalt(_ json: String) -> String {
        let payload = Array(json.utf8)
        let sum = FNV1a.hash(Array("bluelibrary.cursor.v1".utf8) + payload)
        var bytes = payload
        withUnsafeBytes(of: sum.bigEndian) { bytes.append(contentsOf: $0) }
        return Self.base64URL(bytes)
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    @Test func aForgedPositionCursorNearIntMinIsRefusedAndTheServerLives() throws {
        let server = try ServerProcess(dataDirectory: TestApp.temporaryDirectory())
        let fingerprint = AlbumQuery().fingerprint
        // Anchors that do not exist, and an end index whose subtraction would overflow.
        for end in [Int64.min, Int64.min + 3, -1, Int64.max] {
            let json = "{\"a\":[\"01ARZ3NDEKTSV4RRFFQ69G5FAV\"],\"e\":\(end),\"f\":\"\(fingerprint)\"}"
            let response = try RawHTTPClient.request(port: server.port, path: "/albums?cursor=\(Self.forgedWithPublicSalt(json))")
            #expect(response.status == 400, "end index \(end)")
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        #expect(try RawHTTPClient.request(port: server.port, path: "/healthz").status == 200)
    }

    @Test func mangledCursorsAreAllRefusedWithA400() throws {
        let server = try ServerProcess(dataDirectory: TestApp.temporaryDirectory())
        let first = try RawHTTPClient.request(port: server.port, path: "/albums?limit=2").json()
        let cursor = try #require(first["next"] as? String)
        var mangled = ["", "A", "====", String(repeating: "A", count: 5000), "%00", "not a cursor", String(cursor.dropLast()),
                       String(cursor.dropFirst()), cursor + "A", Self.base64URL(Array(repeating: 0xFF, count: 64))]
        // Every single-character change.
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        for (offset, character) in cursor.enumerated() {
            var changed = Array(cursor)
            changed[offset] = alphabet[(alphabet.firstIndex(of: character).map { $0 + 1 } ?? 0) % alphabet.count]
            mangled.append(String(changed))
        }
        for text in mangled {
            let escaped = text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let response = try RawHTTPClient.request(port: server.port, path: "/albums?limit=2&cursor=\(escaped)")
            #expect(response.status == 400, "cursor \(text.prefix(40))")
        }
        #expect(try RawHTTPClient.request(port: server.port, path: "/albums?limit=2&cursor=\(cursor)").status == 200)
    }

    @Test func cursorsSurviveARestartButNotAnotherDatabase() throws {
        let directory = TestApp.temporaryDirectory()
        var server: ServerProcess? = try ServerProcess(dataDirectory: directory)
        let first = try RawHTTPClient.request(port: server!.port, path: "/albums?limit=2").json()
        let cursor = try #require(first["next"] as? String)
        server!.signal(SIGTERM)
        #expect(server!.waitForExit(timeout: 20) == 0)
        server = nil

        let restarted = try ServerProcess(dataDirectory: directory)
        let second = try RawHTTPClient.request(port: restarted.port, path: "/albums?limit=2&cursor=\(cursor)")
        #expect(second.status == 200)
        let titles = (try second.json()["items"] as? [[String: Any]])?.compactMap { $0["title"] as? String }
        #expect(titles?.count == 2)

        // Another database has another key: the same text is not one of its cursors.
        let other = try ServerProcess(dataDirectory: TestApp.temporaryDirectory())
        #expect(try RawHTTPClient.request(port: other.port, path: "/albums?limit=2&cursor=\(cursor)").status == 400)
    }
}
