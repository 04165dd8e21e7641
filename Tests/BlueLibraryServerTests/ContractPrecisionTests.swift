import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Contract precision (found by a property-based API fuzzer), answered in process by the app on
/// the in-memory store: numbers past the ranges, `null` for plain fields, `1.0` for an integer,
/// NUL in a query; and, over a real socket (an event stream), a `Last-Event-ID` that is not ASCII.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct ContractPrecisionTests {
    static func call(_ endpoint: Endpoint, _ method: String, _ path: String, _ body: String? = nil,
                     contentType: String = "application/json") throws -> RawHTTPClient.Response {
        try endpoint.request(method: method, path: path, headers: body == nil ? [:] : ["Content-Type": contentType],
                             body: Array((body ?? "").utf8))
    }

    /// A problem of `status` and `type` whose `errors[0].field` is `field` and whose detail says `says`.
    static func expectProblem(_ response: RawHTTPClient.Response, _ status: Int, type: String, field: String, says: String? = nil,
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(response.status == status, "\(response.status) \(response.text)", sourceLocation: sourceLocation)
        #expect(response.header("Content-Type") == "application/problem+json", sourceLocation: sourceLocation)
        let problem = try response.json()
        #expect(problem["type"] as? String == type, "\(response.text)", sourceLocation: sourceLocation)
        let errors = problem["errors"] as? [[String: Any]] ?? []
        #expect(errors.first?["field"] as? String == field, "\(response.text)", sourceLocation: sourceLocation)
        if let says {
            #expect((problem["detail"] as? String ?? "").contains(says), "\(response.text)", sourceLocation: sourceLocation)
        }
    }

    static let queryType = "urn:bluelibrary:problem:invalid-query-parameter"
    static let pathType = "urn:bluelibrary:problem:invalid-path-parameter"
    static let invalidType = "urn:bluelibrary:problem:invalid"

    /// 10^18 and more: `since` said "must be a non-negative whole number" of a non-negative
    /// whole number, `/albums/at/{i}` answered an `about:blank` problem naming nothing, and
    /// the JSON `index` said "not an integer position". Each now names itself and its range.
    @Test func largeNumbersNameTheParameterAndTheRange() throws {
        let app = try InMemoryApp.app()
        defer { app.shutdown() }
        let routes = Endpoint.inProcess(InProcessClient(app))
        let id = try #require(try Self.call(routes, "GET", "/albums/at/0").json()["id"] as? String)
        for value in ["1000000000000000000", "9223372036854775808", "99999999999999999999999"] {
            // 10^18 is a version (up to 2^63 - 1) this library never gave out: the domain's 400 says so.
            try Self.expectProblem(try Self.call(routes, "GET", "/changes?since=\(value)"), 400, type: Self.queryType, field: "since",
                                   says: value == "1000000000000000000" ? "is newer than the library's current version"
                                       : "since must be a whole number from 0 to 9223372036854775807")
            for method in ["GET", "DELETE"] {
                try Self.expectProblem(try Self.call(routes, method, "/albums/at/\(value)"), 400, type: Self.pathType, field: "index",
                                       says: "index must be a whole number from 0 to 2147483647")
            }
            try Self.expectProblem(try Self.call(routes, "POST", "/albums?index=\(value)", #"{"title": "T", "artist": "A"}"#), 400,
                                   type: Self.queryType, field: "index", says: "from 0 to 2147483647")
            for (method, path, body) in [("POST", "/albums/\(id)/move", #"{"index": \#(value)}"#),
                                         ("PUT", "/state", #"{"currentAlbumIndex": \#(value)}"#),
                                         ("POST", "/api/deleteAlbum", #"{"index": \#(value)}"#),
                                         ("POST", "/albums", #"{"title": "T", "artist": "A", "index": \#(value)}"#)] {
                let field = path == "/state" ? "currentAlbumIndex" : "index"
                try Self.expectProblem(try Self.call(routes, method, path, body), 422, type: Self.invalidType, field: field,
                                       says: "\(field) must be a whole number from 0 to 2147483647")
            }
        }
        // A version that fits is the domain's question (newer than the library: 400 too, its own words).
        let ahead = try Self.call(routes, "GET", "/changes?since=9223372036854775807")
        #expect(ahead.status == 400 && !ahead.text.contains("whole number"), "\(ahead.text)")
        #expect(try Self.call(routes, "GET", "/albums/at/2147483647").status == 404)
    }

    /// `null` for a field the spec types as a plain string was taken as absent.
    @Test func nullForAPlainFieldIsRefusedNamingIt() throws {
        let app = try InMemoryApp.app()
        defer { app.shutdown() }
        let routes = Endpoint.inProcess(InProcessClient(app))
        try Self.expectProblem(try Self.call(routes, "POST", "/libraries", #"{"id": "jazz", "name": null}"#), 422, type: Self.invalidType, field: "name")
        #expect(try Self.call(routes, "GET", "/libraries/jazz").status == 404, "nothing was created")
        try Self.expectProblem(try Self.call(routes, "PUT", "/state", #"{"currentAlbumIndex": 1, "albumId": null}"#), 422,
                               type: Self.invalidType, field: "albumId")
        let id = try #require(try Self.call(routes, "GET", "/albums/at/0").json()["id"] as? String)
        try Self.expectProblem(try Self.call(routes, "POST", "/albums/\(id)/move", #"{"index": 1, "library": null}"#), 422,
                               type: Self.invalidType, field: "library")
        // Nullable fields keep taking null: an album's year, a create's index.
        #expect(try Self.call(routes, "POST", "/albums", #"{"title": "T", "artist": "A", "year": null, "index": null}"#).status == 201)
    }

    /// `{"index": 1.0}` was accepted where the bare `1.0` was not: both are the number 1 (JSON
    /// Schema's `integer` accepts 1.0); a fraction is refused in both forms.
    @Test func integralNumbersAreAcceptedInEveryForm() throws {
        let app = try InMemoryApp.app()
        defer { app.shutdown() }
        let routes = Endpoint.inProcess(InProcessClient(app))
        for body in ["1.0", #"{"index": 1.0}"#] {
            let type = body.hasPrefix("{") ? "application/json" : "text/plain"
            let second = try #require(try Self.call(routes, "GET", "/albums/at/1").json()["id"] as? String)
            let deleted = try Self.call(routes, "POST", "/api/deleteAlbum", body, contentType: type)
            #expect(deleted.status == 200, "\(body): \(deleted.status) \(deleted.text)")
            #expect(try Self.call(routes, "GET", "/albums/\(second)").status == 404, "\(body) deleted the album at 1")
            try Self.expectProblem(try Self.call(routes, "POST", "/api/deleteAlbum", body.replacingOccurrences(of: "1.0", with: "1.5"), contentType: type),
                                   422, type: Self.invalidType, field: "index", says: "from 0 to 2147483647")
        }
        #expect(try Self.call(routes, "PUT", "/state", #"{"currentAlbumIndex": 2e0}"#).status == 200)
    }

    /// A NUL in a list filter was a 422 "Invalid album"; it is a bad query parameter.
    @Test func nulInAQueryIsABadQueryParameter() throws {
        let app = try InMemoryApp.app()
        defer { app.shutdown() }
        let routes = Endpoint.inProcess(InProcessClient(app))
        for field in ["q", "artist", "genre"] {
            try Self.expectProblem(try Self.call(routes, "GET", "/albums?\(field)=a%00b"), 400, type: Self.queryType, field: field, says: "U+0000")
        }
        try Self.expectProblem(try Self.call(routes, "GET", "/albums?yearFrom=2000&yearTo=1990"), 400, type: Self.queryType, field: "yearFrom")
        try Self.expectProblem(try Self.call(routes, "GET", "/albums?q=" + String(repeating: "x", count: 501)), 400, type: Self.queryType, field: "q")
    }

    /// The first event of a stream whose `Last-Event-ID` cannot be resumed.
    static func outdatedEvent(_ port: Int, _ request: [UInt8]) throws -> [UInt8] {
        let client = try RawHTTPClient(port: port)
        try client.send(request)
        let head = try client.readResponse(isHead: true)
        #expect(head.status == 200)
        while let chunk = try client.readChunk() {
            if String(decoding: chunk, as: UTF8.self).contains("event: library.outdated") { return chunk }
        }
        throw StreamEnded()
    }

    /// `?lastEventId=%1E%C2%90n` came back in `library.outdated` as UTF-8 bytes that a reader
    /// assuming Latin-1 (Python's requests for text/event-stream) shows as "\u001eÂ\u0090n": the
    /// echo is JSON-escaped to printable ASCII, so it decodes to exactly what was sent.
    @Test func aNonASCIILastEventIDIsEchoedEscaped() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let viaQuery = try Self.outdatedEvent(app.port, Array("GET /events?lastEventId=%1E%C2%90n%F0%9F%98%80 HTTP/1.1\r\nHost: t\r\n\r\n".utf8))
        let viaHeader = try Self.outdatedEvent(
            app.port, Array("GET /libraries/default/events HTTP/1.1\r\nHost: t\r\nLast-Event-ID: ".utf8) + [0xC3, 0xA9, 0x78, 0xFF]
                + Array("\r\n\r\n".utf8))
        for (frame, sent) in [(viaQuery, "\u{1E}\u{90}n😀"), (viaHeader, "éx\u{FFFD}")] {
            #expect(frame.allSatisfy { $0 < 0x80 }, "\(frame)")
            let data = try #require(String(decoding: frame, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("data: ") })
            let json = try JSONSerialization.jsonObject(with: Data(data.dropFirst(6).utf8)) as? [String: Any]
            #expect(json?["lastEventId"] as? String == sent, "\(data)")
        }
    }
}
