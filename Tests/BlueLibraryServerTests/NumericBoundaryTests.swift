#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// Every number a client can send (query, path, header, body, archive), at and beyond the
/// 64-bit limits, against the real executable: each gets an answer below 500, and the server
/// is alive afterwards. A Swift trap would kill the process and fail every later request.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) struct NumericBoundaryTests {
    static let numbers = [
        "-9223372036854775809", "-9223372036854775808", "-9223372036854775807", "-4294967296", "-2147483649", "-1", "0",
        "2147483648", "4294967296", "9223372036854775806", "9223372036854775807", "9223372036854775808",
        "18446744073709551616", "99999999999999999999999999999999", "1e308", "-1e308", "1.5", "-0", "0x10", "1e3",
    ]

    /// One request; the server must answer it below 500 (or with 503 where that is the contract).
    static func expectAnswered(_ server: ServerProcess, _ method: String, _ path: String, headers: [String: String] = [:],
                               json: String? = nil, contentType: String = "application/json",
                               sourceLocation: SourceLocation = #_sourceLocation) {
        var headers = headers
        if json != nil { headers["Content-Type"] = contentType }
        do {
            let response = try RawHTTPClient.request(
                port: server.port, method: method, path: path, headers: headers, body: Array((json ?? "").utf8))
            #expect(response.status < 500, "\(method) \(path) \(json ?? "") -> \(response.status) \(response.text)",
                    sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(method) \(path) \(json ?? ""): \(error)", sourceLocation: sourceLocation)
        }
    }

    static func query(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? value
    }

    @Test func queryPathAndHeaderNumbers() throws {
        let server = try ServerProcess(dataDirectory: TestApp.temporaryDirectory())
        for value in Self.numbers {
            let q = Self.query(value)
            for parameter in ["limit", "offset", "yearFrom", "yearTo"] {
                Self.expectAnswered(server, "GET", "/albums?\(parameter)=\(q)")
                Self.expectAnswered(server, "GET", "/albums?sort=-year&\(parameter)=\(q)")
            }
            Self.expectAnswered(server, "GET", "/changes?since=\(q)")
            Self.expectAnswered(server, "GET", "/changes?since=0&limit=\(q)")
            Self.expectAnswered(server, "GET", "/undo?limit=\(q)")
            Self.expectAnswered(server, "GET", "/albums/at/\(q)")
            Self.expectAnswered(server, "DELETE", "/albums/at/\(q)")
            Self.expectAnswered(server, "GET", "/albums?limit=1", headers: ["If-None-Match": "\"v\(value)-0\""])
        }
        #expect(try RawHTTPClient.request(port: server.port, path: "/healthz").status == 200)
    }

    @Test func lastEventIDNumbers() throws {
        let server = try ServerProcess(dataDirectory: TestApp.temporaryDirectory())
        for value in Self.numbers {
            for request in ["GET /events HTTP/1.1\r\nHost: t\r\nLast-Event-ID: \(value)\r\n\r\n",
                            "GET /events?lastEventId=\(Self.query(value)) HTTP/1.1\r\nHost: t\r\n\r\n"] {
                let client = try RawHTTPClient(port: server.port)
                try client.send(request)
                let head = try client.readResponse(isHead: true)
                #expect(head.status < 500, "\(request) -> \(head.status)")
            }
        }
        #expect(try RawHTTPClient.request(port: server.port, path: "/healthz").status == 200)
    }

    @Test func framingNumbers() throws {
        let server = try ServerProcess(dataDirectory: TestApp.temporaryDirectory())
        for value in Self.numbers + ["+1", " 1", "1 1", "1,1"] {
            let client = try RawHTTPClient(port: server.port)
            try client.send("POST /albums HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: \(value)\r\n\r\n{}")
            let response = try client.readResponse()
            #expect(response.status < 500, "Content-Length \(value) -> \(response.status)")
        }
        for size in ["FFFFFFFFFFFFFFFFFF", "8000000000000000", "7FFFFFFFFFFFFFFF", "-1", "0x10", "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"] {
            let client = try RawHTTPClient(port: server.port)
            try client.send("POST /albums HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\n{}\r\n0\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status < 500, "chunk size \(size) -> \(response.status)")
        }
        #expect(try RawHTTPClient.request(port: server.port, path: "/healthz").status == 200)
    }

    @Test func bodyNumbers() throws {
        let server = try ServerProcess(dataDirectory: TestApp.temporaryDirectory())
        let first = try RawHTTPClient.request(port: server.port, path: "/albums/at/0").json()
        let id = try #require(first["id"] as? String)
        for value in Self.numbers {
            Self.expectAnswered(server, "POST", "/albums", json: "{\"title\":\"T\",\"artist\":\"A\",\"year\":\(value)}")
            Self.expectAnswered(server, "POST", "/albums", json: "{\"title\":\"T\",\"artist\":\"A\",\"index\":\(value)}")
            Self.expectAnswered(server, "PATCH", "/albums/\(id)", json: "{\"year\":\(value)}", contentType: "application/merge-patch+json")
            Self.expectAnswered(server, "POST", "/albums/\(id)/move", json: "{\"index\":\(value)}")
            Self.expectAnswered(server, "PUT", "/state", json: "{\"currentAlbumIndex\":\(value)}")
            Self.expectAnswered(server, "POST", "/api/addAlbum", json: "{\"title\":\"T\",\"artist\":\"A\",\"index\":\(value)}")
            Self.expectAnswered(server, "POST", "/api/deleteAlbum", json: "{\"index\":\(value)}")
            for setting in ["{\"undo\":{\"depth\":N}}", "{\"paging\":{\"defaultLimit\":N}}", "{\"paging\":{\"maxLimit\":N}}",
                            "{\"covers\":{\"cacheSizeLimitBytes\":N}}", "{\"covers\":{\"fetchTimeoutSeconds\":N}}",
                            "{\"covers\":{\"freshnessSeconds\":N}}", "{\"access\":{\"attemptLimit\":N}}",
                            "{\"access\":{\"checkIntervalSeconds\":N}}",
                            "{\"schemaVersion\":N}"] {
                Self.expectAnswered(server, "PATCH", "/settings", json: setting.replacingOccurrences(of: "N", with: value),
                                    contentType: "application/merge-patch+json")
            }
        }
        #expect(try RawHTTPClient.request(port: server.port, path: "/healthz").status == 200)
        #expect(try RawHTTPClient.request(port: server.port, path: "/albums?limit=1").status == 200)
    }

    @Test func archiveNumbers() throws {
        let server = try ServerProcess(dataDirectory: TestApp.temporaryDirectory())
        let archive = try RawHTTPClient.request(port: server.port, path: "/archive").text
        for value in Self.numbers {
            for (field, replacement) in [("\"year\":", "\"year\":\(value),\"x\":"), ("\"currentAlbumIndex\":", "\"currentAlbumIndex\":\(value),\"x\":"),
                                         ("\"formatVersion\":", "\"formatVersion\":\(value),\"x\":"), ("\"version\":", "\"version\":\(value),\"x\":")] {
                guard let range = archive.range(of: field) else { continue }
                let edited = archive.replacingCharacters(in: range, with: replacement)
                Self.expectAnswered(server, "PUT", "/archive", json: edited)
            }
            let dated = archive.replacingOccurrences(of: "\"createdAt\":\"", with: "\"createdAt\":\(value),\"y\":\"")
            Self.expectAnswered(server, "PUT", "/archive", json: dated)
        }
        #expect(try RawHTTPClient.request(port: server.port, path: "/healthz").status == 200)
    }
}
