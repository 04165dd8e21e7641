#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation
import TestThreads
import Testing

@testable import BlueLibraryClient

/// Libraries, views and moves between libraries on the wire: the requests the calls build and
/// the bodies they read, without a server (`LibraryClientTests` runs them against one).
@Suite(.ownThreads) struct SourceWireFormatTests {
    let client = BlueLibraryClient(baseURL: URL(string: "http://example.test:8080/api")!)

    func line(_ request: URLRequest) -> String {
        "\(request.httpMethod ?? "?") \(request.url?.absoluteString.replacingOccurrences(of: "http://example.test:8080/api", with: "") ?? "?")"
    }

    func body(_ request: URLRequest) -> String { request.httpBody.map { String(decoding: $0, as: UTF8.self) } ?? "" }

    @Test func theDefaultLibraryKeepsTheUnprefixedRoutesAndOthersArePrefixed() throws {
        let query = AlbumPageQuery(limit: 2)
        #expect(line(try client.listCall(query).request) == "GET /albums?limit=2")
        #expect(line(try client.listCall(query, in: "default").request) == "GET /albums?limit=2")
        #expect(line(try client.listCall(query, in: "jazz").request) == "GET /libraries/jazz/albums?limit=2")
        #expect(line(try client.listCall(query, in: .view("all"), ifNoneMatch: "\"e\"").request) == "GET /views/all/albums?limit=2")
        #expect(try client.listCall(query, in: .view("all"), ifNoneMatch: "\"e\"").request.value(forHTTPHeaderField: "If-None-Match") == "\"e\"")

        #expect(line(try client.albumCall(at: 3, in: .view("all")).request) == "GET /views/all/albums/at/3")
        #expect(line(try client.deleteCall(at: 3, in: .view("all")).request) == "DELETE /views/all/albums/at/3")
        #expect(line(try client.addCall(AlbumInput(title: "T", artist: "A"), at: 2, in: .view("all"), client: nil, idempotencyKey: nil).request)
            == "POST /views/all/albums?index=2")
        #expect(line(try client.albumCall(id: "X1", in: "jazz").request) == "GET /libraries/jazz/albums/X1")
        #expect(line(try client.deleteCall(id: "X1", in: "default").request) == "DELETE /albums/X1")
        #expect(line(try client.moveCall(id: "X1", to: 4, in: "jazz").request) == "POST /libraries/jazz/albums/X1/move")
        #expect(line(try client.undoCall(client: "phone", in: "jazz").request) == "POST /libraries/jazz/undo?client=phone")
        #expect(line(try client.undoStatusCall(in: "jazz").request) == "GET /libraries/jazz/undo")
        #expect(line(try client.stateCall(client: nil, in: "jazz").request) == "GET /libraries/jazz/state")
        #expect(line(try client.setStateCall(.index(1), client: nil, in: "jazz").request) == "PUT /libraries/jazz/state")
    }

    @Test func aMoveBetweenLibrariesNamesTheTargetAndLeavesOutAMissingIndex() throws {
        let move = try client.moveCall(id: "X1", from: "default", toLibrary: "jazz", at: 0).request
        #expect(line(move) == "POST /albums/X1/move")
        #expect(body(move) == #"{"index":0,"library":"jazz"}"#)
        #expect(move.value(forHTTPHeaderField: "Content-Type") == "application/json")
        let append = try client.moveCall(id: "X1", from: "rock", toLibrary: "default", at: nil).request
        #expect(line(append) == "POST /libraries/rock/albums/X1/move")
        #expect(body(append) == #"{"library":"default"}"#)
    }

    @Test func libraryAndViewCallsBuildTheCatalogRequests() throws {
        #expect(line(try client.librariesCall().request) == "GET /libraries")
        #expect(line(try client.libraryCall("jazz").request) == "GET /libraries/jazz")
        let create = try client.createLibraryCall(id: "jazz", name: "Jazz & Blues").request
        #expect(line(create) == "POST /libraries" && body(create) == #"{"id":"jazz","name":"Jazz & Blues"}"#)
        #expect(body(try client.createLibraryCall(id: "jazz", name: nil).request) == #"{"id":"jazz"}"#)
        let rename = try client.renameLibraryCall("jazz", to: "Jazz").request
        #expect(line(rename) == "PATCH /libraries/jazz" && body(rename) == #"{"name":"Jazz"}"#)
        #expect(line(try client.deleteLibraryCall("jazz", force: false).request) == "DELETE /libraries/jazz")
        #expect(line(try client.deleteLibraryCall("jazz", force: true).request) == "DELETE /libraries/jazz?force=true")

        #expect(line(try client.viewsCall().request) == "GET /views")
        #expect(line(try client.viewCall("all").request) == "GET /views/all")
        let plain = try client.createViewCall(ViewInput(id: "all", sources: ["default", "jazz"])).request
        #expect(line(plain) == "POST /views" && body(plain) == #"{"id":"all","sources":["default","jazz"]}"#)
        let filtered = try client.createViewCall(ViewInput(id: "old", name: "Old", sources: ["jazz"], filter: ViewFilter(genre: "Jazz", yearTo: 1970)))
        #expect(body(filtered.request) == #"{"filter":{"genre":"Jazz","yearTo":1970},"id":"old","name":"Old","sources":["jazz"]}"#)
        let update = try client.updateViewCall("old", ViewUpdate(sources: ["jazz", "default"])).request
        #expect(line(update) == "PATCH /views/old" && body(update) == #"{"sources":["jazz","default"]}"#)
        #expect(body(try client.updateViewCall("old", ViewUpdate(filter: ViewFilter())).request) == #"{"filter":{}}"#)
        #expect(line(try client.deleteViewCall("old").request) == "DELETE /views/old")
    }

    @Test func catalogBodiesDecode() throws {
        let libraries = try client.librariesCall().read(answer(200, #"""
            {"libraries":[{"id":"default","name":"default","albumCount":5,"version":7},{"id":"jazz","name":"Jazz","albumCount":0,"version":0}]}
            """#))
        #expect(libraries == [LibraryResource(id: "default", name: "default", albumCount: 5, version: 7),
                              LibraryResource(id: "jazz", name: "Jazz", albumCount: 0, version: 0)])
        let views = try client.viewsCall().read(answer(200, #"""
            {"views":[{"id":"all","name":"All","sources":["default","jazz"],"filter":{"genre":"Jazz"},"revision":2,
            "versions":{"default":12,"jazz":3}},{"id":"bare","name":"bare","sources":["jazz"],"revision":1}]}
            """#))
        #expect(views[0] == ViewResource(id: "all", name: "All", sources: ["default", "jazz"], filter: ViewFilter(genre: "Jazz"), revision: 2,
                                         versions: ["default": 12, "jazz": 3]))
        #expect(views[1].filter.isEmpty && views[1].versions == nil)
        let missing = #expect(throws: BlueLibraryClientError.self) { try client.viewsCall().read(answer(200, #"{"libraries":[]}"#)) }
        #expect(missing?.description.contains("views") == true)
    }

    @Test func aDeleteSucceedsOnNoContentAndThrowsTheProblemOtherwise() throws {
        try client.deleteLibraryCall("jazz", force: false).read(answer(204, ""))
        let refused = #expect(throws: BlueLibraryClientError.self) {
            try client.deleteLibraryCall("jazz", force: false).read(answer(409, #"""
                {"type":"about:blank","title":"Conflict","status":409,"detail":"library jazz holds 3 albums; delete with force=true"}
                """#))
        }
        #expect(refused?.status == 409 && refused?.description == "library jazz holds 3 albums; delete with force=true")
    }

    @Test func aViewPageCarriesLibrariesAndVersions() throws {
        let json = """
            {"items":[{"id":"A1","title":"Kind of Blue","artist":"Miles Davis","genre":"Jazz","year":1959,"coverUrl":null,
            "createdAt":"2024-05-01T12:00:00.000Z","updatedAt":"2024-05-01T12:00:00.000Z","index":5,"library":"jazz"}],
            "next":null,"versions":{"default":12,"jazz":3}}
            """
        let page = try JSONDecoder().decode(AlbumPageResource.self, from: Data(json.utf8))
        #expect(page.items[0].library == "jazz" && page.items[0].index == 5)
        #expect(page.versions == ["default": 12, "jazz": 3])
        #expect(page.version == 15)  // no single version: the sum, which grows with any source

        let both = try JSONDecoder().decode(AlbumPageResource.self, from: Data(#"{"items":[],"next":null,"version":4,"versions":{"a":1}}"#.utf8))
        #expect(both.version == 4 && both.versions == ["a": 1])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(AlbumPageResource.self, from: Data(#"{"items":[],"next":null}"#.utf8)) }

        // Encoding keeps `library` when known and leaves it out otherwise.
        let encoded = String(decoding: try JSONEncoder().encode(page.items[0]), as: UTF8.self)
        #expect(encoded.contains(#""library":"jazz""#))
        var plain = page.items[0]
        plain.library = nil
        #expect(!String(decoding: try JSONEncoder().encode(plain), as: UTF8.self).contains("library"))
    }

    func answer(_ status: Int, _ body: String) -> BlueLibraryClient.Answer {
        BlueLibraryClient.Answer(status: status, headers: ["content-type": "application/json"], body: Data(body.utf8))
    }
}
