import Foundation
import TestThreads
import Testing

@testable import BlueLibraryClient

/// The client's wire types and request building, without a server.
@Suite(.ownThreads) struct WireFormatTests {
    @Test func sortParsesAndPrintsTheWireSpelling() {
        #expect(AlbumSort("title") == AlbumSort(.title))
        #expect(AlbumSort("-createdAt") == AlbumSort(.createdAt, descending: true))
        #expect(AlbumSort("-year")?.description == "-year")
        #expect(AlbumSort("Title") == nil)
        #expect(AlbumSort("--year") == nil)
        #expect(AlbumSort("") == nil)
    }

    @Test func queryItemsAreInAFixedOrderAndACursorWinsOverAnOffset() {
        let query = AlbumPageQuery(limit: 10, offset: 20, sort: AlbumSort("-year"), q: "bowie", artist: "David Bowie", genre: "Pop",
                                   yearFrom: 1990, yearTo: 2000, count: true)
        #expect(query.queryItems.map { "\($0.name)=\($0.value)" } == [
            "limit=10", "offset=20", "sort=-year", "q=bowie", "artist=David Bowie", "genre=Pop", "yearFrom=1990", "yearTo=2000", "count=true",
        ])
        let next = query.continuing(at: "abc")
        #expect(next.queryItems.prefix(2).map { "\($0.name)=\($0.value)" } == ["limit=10", "cursor=abc"])
        #expect(AlbumPageQuery().queryItems.isEmpty)
    }

    @Test func urlsKeepABasePathAndPercentEncodeEverythingButUnreserved() throws {
        let client = BlueLibraryClient(baseURL: URL(string: "http://example.test:8080/api/")!)
        let url = try client.url(["albums", "a/b c"], query: [("q", "AC/DC + Queen & co=1 é")])
        #expect(url.absoluteString == "http://example.test:8080/api/albums/a%2Fb%20c?q=AC%2FDC%20%2B%20Queen%20%26%20co%3D1%20%C3%A9")
        let list = try client.listRequest(AlbumPageQuery(limit: 2, cursor: "x+y=="), ifNoneMatch: "\"v5\"")
        #expect(list.url?.absoluteString == "http://example.test:8080/api/albums?limit=2&cursor=x%2By%3D%3D")
        #expect(list.value(forHTTPHeaderField: "If-None-Match") == "\"v5\"")
        #expect(list.httpMethod == "GET")
    }

    @Test func theBaseURLMustBeHTTP() {
        #expect(throws: BlueLibraryClientError.self) { try BlueLibraryClient(url: "ftp://example.test") }
        #expect(throws: BlueLibraryClientError.self) { try BlueLibraryClient(url: "not a url") }
        #expect(throws: Never.self) { try BlueLibraryClient(url: "https://example.test/library") }
    }

    @Test func linkHeaderNextTargetIsFound() {
        #expect(BlueLibraryClient.nextLink(#"<http://h/albums?cursor=abc&limit=2>; rel="next""#)?.absoluteString
            == "http://h/albums?cursor=abc&limit=2")
        #expect(BlueLibraryClient.nextLink(#"<http://h/a>; rel="prev", <http://h/b>; rel=next"#)?.absoluteString == "http://h/b")
        #expect(BlueLibraryClient.nextLink(#"<http://h/a>; rel="prev""#) == nil)
    }

    @Test func pageDecodesTheCursorFormatAndRejectsABodyWithoutNext() throws {
        let json = """
            {"items":[{"id":"01HZY8Q6V9T3X2K7M4N5P6R7S8","title":"Best of Bowie","artist":"David Bowie","genre":"Pop","year":1992,
            "coverUrl":null,"createdAt":"2024-05-01T12:00:00.000Z","updatedAt":"2024-05-01T12:00:00.001Z","index":0},
            {"id":"01HZY8Q6VA0B1C2D3E4F5G6H7J","title":"X","artist":"Y","genre":"Pop","year":null,"coverUrl":null,
            "createdAt":"2024-05-01T12:00:00.000Z","updatedAt":"2024-05-01T12:00:00.000Z"}],
            "next":"b3BhcXVl","version":7,"total":12}
            """
        let page = try JSONDecoder().decode(AlbumPageResource.self, from: Data(json.utf8))
        #expect(page.items.count == 2)
        #expect(page.items[0].index == 0 && page.items[1].index == nil)
        #expect(page.items[0].year == 1992 && page.items[1].year == nil)
        #expect(page.next == "b3BhcXVl" && page.version == 7 && page.total == 12)
        #expect(page.items[0].createdDate == Date(timeIntervalSince1970: 1_714_564_800))
        #expect(abs((page.items[0].updatedDate?.timeIntervalSince1970 ?? 0) - 1_714_564_800.001) < 0.0005)

        let last = try JSONDecoder().decode(AlbumPageResource.self, from: Data(#"{"items":[],"next":null,"version":3}"#.utf8))
        #expect(last.next == nil && last.total == nil)

        // The offset-paged format (nextOffset) is not this one: an error, not a silent last page.
        let old = #"{"items":[],"limit":50,"nextOffset":null,"offset":0,"total":0,"version":3}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(AlbumPageResource.self, from: Data(old.utf8)) }
    }

    @Test func albumsEncodeNullsLikeTheServerAndLeaveAnUnknownIndexOut() throws {
        let album = AlbumResource(id: "01HZY8Q6V9T3X2K7M4N5P6R7S8", title: "T", artist: "A", createdAt: "2024-05-01T12:00:00.000Z",
                                  updatedAt: "2024-05-01T12:00:00.000Z")
        let object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(album)) as? [String: Any])
        #expect(object["year"] is NSNull && object["coverUrl"] is NSNull)
        #expect(object["index"] == nil)
        #expect(object["genre"] as? String == "Pop")
        let undo = try JSONDecoder().decode(UndoResultResource.self, from: Data(#"{"undone":"remove 'X'","album":null,"version":3}"#.utf8))
        #expect(String(decoding: try JSONEncoder().encode(undo), as: UTF8.self).contains(#""album":null"#))
        let input = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(AlbumInput(title: "T", artist: "A"))) as? [String: Any])
        #expect(Set(input.keys) == ["title", "artist"])
    }

    @Test func problemsDecodeAndReadOnOneLine() throws {
        let json = """
            {"type":"about:blank","title":"Unprocessable Content","status":422,"detail":"title must not be empty",
            "errors":[{"field":"title","message":"title must not be empty"},{"field":"year","message":"year must be\\nfrom 1000 to 9999"}]}
            """
        let problem = try JSONDecoder().decode(Problem.self, from: Data(json.utf8))
        #expect(problem.status == 422)
        #expect(problem.errors.map(\.field) == ["title", "year"])
        #expect(problem.description == "title must not be empty (year: year must be from 1000 to 9999)")
        #expect(BlueLibraryClientError.problem(problem).status == 422)
        #expect(BlueLibraryClientError.problem(problem).description == problem.description)

        // Not problem JSON: a problem made up from the status and the text.
        let made = BlueLibraryClient.problem(.init(status: 502, headers: [:], body: Data("upstream\nbroke".utf8)))
        #expect(made.status == 502 && made.detail == "upstream broke")
    }

    @Test func retryAfterReadsSecondsAndHTTPDates() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)  // Tue, 14 Nov 2023 22:13:20 GMT
        #expect(BlueLibraryClient.retryAfterSeconds("120", now: now) == 120)
        #expect(BlueLibraryClient.retryAfterSeconds(" 7 ", now: now) == 7)
        #expect(BlueLibraryClient.retryAfterSeconds("Tue, 14 Nov 2023 22:14:20 GMT", now: now) == 60)
        #expect(BlueLibraryClient.retryAfterSeconds("Tue, 14 Nov 2023 22:00:00 GMT", now: now) == 0)
        #expect(BlueLibraryClient.retryAfterSeconds("-5", now: now) == nil)
        #expect(BlueLibraryClient.retryAfterSeconds("soon", now: now) == nil)
    }

    @Test func a401And429AreTypedWithTheProblemAndRetryAfterAndOtherStatusesStayProblems() throws {
        let body = Data(#"{"type":"urn:bluelibrary:problem:locked-out","title":"Locked out","status":429,"detail":"try again in 30 seconds."}"#.utf8)
        let locked = BlueLibraryClient.failure(.init(status: 429, headers: ["retry-after": "30"], body: body))
        #expect(locked == .tooManyRequests(try JSONDecoder().decode(Problem.self, from: body), retryAfter: 30))
        #expect(locked.status == 429 && locked.retryAfter == 30 && locked.isAccessRefusal && locked.problem?.title == "Locked out")
        #expect(locked.description == "try again in 30 seconds.")  // the detail names the wait already
        // A 429 from elsewhere (a proxy): made-up problem, the wait added when given, nil when not.
        let proxy = BlueLibraryClient.failure(.init(status: 429, headers: ["retry-after": "5"], body: Data("slow down".utf8)))
        #expect(proxy.description == "slow down (retry after 5 s)")
        #expect(BlueLibraryClient.failure(.init(status: 429, headers: [:], body: Data())).retryAfter == nil)

        let unauthorized = BlueLibraryClient.failure(.init(status: 401, headers: [:], body: Data(#"{"status":401,"detail":"send a token"}"#.utf8)))
        guard case let .unauthorized(problem, retryAfter) = unauthorized else {
            Issue.record("expected .unauthorized, got \(unauthorized)")
            return
        }
        #expect(problem.detail == "send a token" && retryAfter == nil && unauthorized.status == 401 && unauthorized.description == "send a token")
        for status in [400, 403, 404, 503] {
            let other = BlueLibraryClient.failure(.init(status: status, headers: ["retry-after": "1"], body: Data()))
            // A 403 is a key without the scope or libraries the request needs: a refusal of the
            // key, not of the request (a replica keeps the change queued), yet still a `.problem`.
            #expect(other.problem?.status == status && other.isAccessRefusal == (status == 403) && other.retryAfter == nil, "\(status)")
            guard case .problem = other else { Issue.record("\(status): \(other)"); continue }
        }
    }
}
