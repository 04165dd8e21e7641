import BlueLibraryAPI
import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// CSV out (`GET /albums` as `text/csv`) and in (`POST /albums/import`) on a real server.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class CSVRouteTests {
    let app: BlueLibraryApp

    init() throws {
        app = try TestApp.make { $0.seed = false }
        app.start()
    }

    deinit { app.shutdown() }

    func get(_ path: String, headers: [String: String] = [:]) throws -> RawHTTPClient.Response {
        try RawHTTPClient.request(port: app.port, path: path, headers: headers, receiveTimeout: 30)
    }

    func post(_ path: String, csv: String, headers: [String: String] = [:]) throws -> RawHTTPClient.Response {
        try post(path, bytes: Array(csv.utf8), headers: headers)
    }

    func post(_ path: String, bytes: [UInt8], headers: [String: String] = [:]) throws -> RawHTTPClient.Response {
        try RawHTTPClient.request(
            port: app.port, method: "POST", path: path, headers: ["Content-Type": "text/csv"].merging(headers) { $1 }, body: bytes,
            receiveTimeout: 60)
    }

    func add(_ title: String, _ artist: String, year: Int? = nil) throws {
        var body: [String: Any] = ["title": title, "artist": artist]
        if let year { body["year"] = year }
        let response = try RawHTTPClient.request(
            port: app.port, method: "POST", path: "/albums", headers: ["Content-Type": "application/json"],
            body: Array(try JSONSerialization.data(withJSONObject: body)))
        #expect(response.status == 201, "\(response.text)")
    }

    /// The data rows of a CSV body, each cell by header name.
    func csvRows(_ response: RawHTTPClient.Response) throws -> [[String: String]] {
        let records = try CSVReader.records(response.body)
        #expect(records.first?.fields == AlbumCSV.header)
        return records.dropFirst().map { Dictionary(uniqueKeysWithValues: zip(AlbumCSV.header, $0.fields)) }
    }

    func total() throws -> (count: Int, version: Int) {
        let page = try get("/albums?limit=1&count=true").json()
        return (page["total"] as? Int ?? -1, page["version"] as? Int ?? -1)
    }

    @Test func hostileTitlesRoundTrip() throws {
        let titles = ["Comma, and more", "Say \"hi\"", "Line one\nline two", "Crème brûlée", "東京物語", "=SUM(A1:A3)", "-minus", "plain"]
        for (number, title) in titles.enumerated() { try add(title, "Artist \(number)", year: 1990 + number) }
        let response = try get("/albums?format=csv")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "text/csv; charset=utf-8")
        #expect(response.header("Content-Disposition") == "attachment; filename=\"default.csv\"")
        let rows = try csvRows(response)
        #expect(rows.count == titles.count)
        for (number, row) in rows.enumerated() {
            let formula = titles[number].first.map { "=+-@".contains($0) } ?? false
            #expect(row["title"] == (formula ? "'" : "") + titles[number])
            #expect(row["index"] == String(number) && row["year"] == String(1990 + number))
            #expect(row["artist"] == "Artist \(number)" && row["genre"] == "Pop")
        }
        // The exported file imports back (the server's columns are ignored).
        let back = try post("/albums/import", bytes: response.body)
        #expect(back.status == 201, "\(back.text)")
        let summary = try back.json()
        #expect(summary["imported"] as? Int == titles.count && summary["firstIndex"] as? Int == titles.count)
        #expect(summary["ignoredColumns"] as? [String] == ["id", "index", "createdAt", "updatedAt"])
    }

    @Test func acceptChoosesCSVOnlyWhenPreferred() throws {
        try add("One", "A")
        #expect(try get("/albums", headers: ["Accept": "text/csv"]).header("Content-Type") == "text/csv; charset=utf-8")
        #expect(try get("/albums", headers: ["Accept": "text/csv, */*;q=0.5"]).header("Content-Type") == "text/csv; charset=utf-8")
        #expect(try get("/albums", headers: ["Accept": "*/*"]).header("Content-Type") == "application/json")
        #expect(try get("/albums", headers: ["Accept": "application/json, text/csv"]).header("Content-Type") == "application/json")
        #expect(try get("/albums?format=json", headers: ["Accept": "text/csv"]).header("Content-Type") == "application/json")
        #expect(try get("/albums?format=xml").status == 400)
    }

    @Test func filtersAndSortApply() throws {
        for (title, artist) in [("Zeta", "Kraftwerk"), ("Alpha", "Can"), ("Mid", "Kraftwerk"), ("Beta", "Kraftwerk")] {
            try add(title, artist)
        }
        let rows = try csvRows(try get("/albums?format=csv&artist=Kraftwerk&sort=title"))
        #expect(rows.map { $0["title"] } == ["Beta", "Mid", "Zeta"])
        #expect(rows.map { $0["index"] } == ["0", "1", "2"])  // the position in this listing
        let view = try RawHTTPClient.request(
            port: app.port, method: "POST", path: "/views", headers: ["Content-Type": "application/json"],
            body: Array(#"{"id":"kw","sources":["default"],"filter":{"artist":"Kraftwerk"}}"#.utf8))
        #expect(view.status == 201, "\(view.text)")
        let viewRows = try csvRows(try get("/views/kw/albums?format=csv&sort=-title"))
        #expect(viewRows.map { $0["title"] } == ["Zeta", "Mid", "Beta"])
    }

    @Test func pagingParametersAreRefused() throws {
        for parameter in ["limit=10", "cursor=abc", "offset=5"] {
            let response = try get("/albums?format=csv&" + parameter)
            #expect(response.status == 400)
            let name = String(parameter.prefix { $0 != "=" })
            #expect((try response.json()["errors"] as? [[String: Any]])?.first?["field"] as? String == name)
        }
    }

    @Test func discogsExportImports() throws {
        let file = "\u{FEFF}Catalog#,Artist,Title,Label,Format,Rating,Released,release_id,CollectionFolder,Date Added\r\n"
            + "SHVL 804,Pink Floyd,The Dark Side Of The Moon,Harvest,\"LP, Album\",5,1973-03-01,1873013,Uncategorized,2021-01-01 10:00:00\r\n"
            + "DGC-24425,Nirvana (2),Nevermind,DGC,\"CD, Album\",,1991,367084,Uncategorized,2021-01-02 10:00:00\r\n"
        let response = try post("/libraries/default/albums/import", csv: file)
        #expect(response.status == 201, "\(response.text)")
        let rows = try csvRows(try get("/albums?format=csv"))
        #expect(rows.map { $0["title"] } == ["The Dark Side Of The Moon", "Nevermind"])
        #expect(rows.map { $0["artist"] } == ["Pink Floyd", "Nirvana"])
        #expect(rows.map { $0["year"] } == ["1973", "1991"])
    }

    @Test func aBadRowAppliesNothingAndOneUndoTakesAnImportBack() throws {
        try add("Kept", "Someone")
        let before = try total()
        let bad = "title,artist,year\nGood,Band,1999\n,No Title,2000\nFine,Band,not a year\n"
        let refused = try post("/albums/import", csv: bad)
        #expect(refused.status == 422)
        let fields = (try refused.json()["errors"] as? [[String: Any]])?.compactMap { $0["field"] as? String }
        #expect(fields == ["line 3, column \"title\"", "line 4, column \"year\""], "\(refused.text)")
        #expect(try total() == before)

        let good = try post("/albums/import?index=0", csv: "title,artist\nA,X\nB,Y\nC,Z\n")
        #expect(good.status == 201)
        #expect(try good.json()["firstIndex"] as? Int == 0)
        #expect(try total().count == before.count + 3)
        let undo = try RawHTTPClient.request(port: app.port, method: "POST", path: "/undo")
        #expect(undo.status == 200, "\(undo.text)")
        #expect(try total().count == before.count)
        #expect(try post("/albums/import", bytes: Array("{}".utf8), headers: ["Content-Type": "application/json"]).status == 415)
    }

    /// 20 MB in long rows (3 KB each: the row limit allows ~6,500 of them) is taken; a body
    /// over the 32 MiB limit is 413.
    @Test func largeFilesAndTheBodyLimit() throws {
        let title = String(repeating: "t", count: 480), artist = String(repeating: "a", count: 480)
        let cover = "https://covers.example/" + String(repeating: "c", count: 2000)
        var file = Array("title,artist,coverUrl\n".utf8)
        var rows = 0
        while file.count < 20_000_000 {
            file += Array("\(title) \(rows),\(artist),\(cover)\n".utf8)
            rows += 1
        }
        let response = try post("/albums/import", bytes: file)
        #expect(response.status == 201, "\(response.text.prefix(300))")
        #expect(try response.json()["imported"] as? Int == rows)
        // The server answers the head (its Content-Length) without reading the body.
        let client = try RawHTTPClient(port: app.port, receiveTimeout: 10)
        try client.send("POST /albums/import HTTP/1.1\r\nHost: test\r\nContent-Type: text/csv\r\n"
            + "Content-Length: \(AlbumImportRoute.maxBodyBytes + 1)\r\n\r\ntitle,artist\n")
        #expect(try client.readResponse().status == 413)
    }

    @Test func twentyThousandAlbumsStream() throws {
        let archive = try RawHTTPClient.request(
            port: app.port, method: "PUT", path: "/archive", headers: ["Content-Type": "application/json"],
            body: ArchiveUploadTests.archive(albums: 20_000), receiveTimeout: 60)
        #expect(archive.status == 200, "\(archive.text)")
        let response = try get("/albums?format=csv")
        #expect(response.status == 200)
        #expect((response.chunks?.count ?? 0) > 1)  // chunked, written as it was read
        let rows = try csvRows(response)
        #expect(rows.count == 20_000)
        #expect(rows.last?["title"] == "Album 19999" && rows.last?["index"] == "19999")
    }
}
