import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// U+0000 in album text and in a view's filter is a 422 naming the field on both stores
/// (PostgreSQL cannot store it; SQLite answers the same for one API); in a list's query it is
/// a 400 naming the parameter.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads)
struct NulTextTests {
    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }
    }

    @Test(arguments: Backend.allCases)
    func nulIsRefusedNamingTheField(_ backend: Backend) throws {
        let app: BlueLibraryApp
        switch backend {
        case .sqlite:
            app = try TestApp.make()
        case .postgres:
            let url = try PostgresServer.shared().makeDatabase()
            app = try TestApp.make {
                $0.databaseURL = url
                $0.databasePoolSize = 4
            }
        }
        defer { app.shutdown() }  // never started: answered in process
        let routes = InProcessClient(app)
        func call(_ method: String, _ path: String, _ json: String? = nil) throws -> RawHTTPClient.Response {
            routes.request(method: method, path: path, headers: json == nil ? [:] : ["Content-Type": "application/json"],
                           body: Array((json ?? "").utf8))
        }
        func expectRefused(_ response: RawHTTPClient.Response, field: String, status: Int = 422,
                           sourceLocation: SourceLocation = #_sourceLocation) throws {
            #expect(response.status == status, "\(response.status) \(response.text)", sourceLocation: sourceLocation)
            if status == 400 {
                #expect(try response.json()["type"] as? String == "urn:bluelibrary:problem:invalid-query-parameter", sourceLocation: sourceLocation)
            }
            #expect(response.header("Content-Type") == "application/problem+json", sourceLocation: sourceLocation)
            let errors = try response.json()["errors"] as? [[String: Any]] ?? []
            #expect(errors.contains { $0["field"] as? String == field && ($0["message"] as? String ?? "").contains("U+0000") },
                    "\(response.text)", sourceLocation: sourceLocation)
        }

        try expectRefused(try call("POST", "/albums", #"{"title":"Blue\u0000Train","artist":"John Coltrane"}"#), field: "title")
        try expectRefused(try call("POST", "/albums", #"{"title":"Blue Train","artist":"\u0000"}"#), field: "artist")
        let created = try call("POST", "/albums", #"{"title":"Blue Train","artist":"John Coltrane"}"#)
        #expect(created.status == 201)
        let id = try #require(try created.json()["id"] as? String)
        try expectRefused(try call("PATCH", "/albums/\(id)", #"{"genre":"Jazz\u0000"}"#), field: "genre")
        // In a query it is a bad query parameter (it was a 422 "Invalid album").
        for field in ["q", "artist", "genre"] {
            try expectRefused(try call("GET", "/albums?\(field)=a%00b"), field: field, status: 400)
        }
        _ = try call("POST", "/views", #"{"id":"all","sources":["default"]}"#)
        try expectRefused(try call("GET", "/views/all/albums?q=%00"), field: "q", status: 400)
        try expectRefused(try call("POST", "/views", #"{"id":"nul","sources":["default"],"filter":{"q":"\u0000"}}"#), field: "filter.q")
        #expect(try call("GET", "/albums?q=Blue").text.contains("Blue Train"), "nothing else changed")
    }
}
