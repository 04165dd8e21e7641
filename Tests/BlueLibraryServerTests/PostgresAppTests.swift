import BlueLibraryTestSupport
import Essentials
import Foundation
import HTTPServer
import HTTPTestSupport
import Library
import Postgres
import Testing

@testable import BlueLibraryServer

/// The app on PostgreSQL in this process: the backend is chosen by the URL, the database's
/// absence is 503 (never 500), `/readyz` follows the database and `/healthz` does not.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct PostgresAppTests {
    static func app(_ url: String, _ adjust: (inout ServeConfiguration) -> Void = { _ in }) throws -> BlueLibraryApp {
        try TestApp.make {
            $0.databaseURL = url
            $0.databasePoolSize = 4
            $0.seed = false
            adjust(&$0)
        }
    }

    @Test func aDatabaseURLRunsTheAppOnPostgreSQL() throws {
        let app = try Self.app(try PostgresServer.shared().makeDatabase())
        app.start()
        defer { app.shutdown() }
        #expect(app.backend is PostgresBackend && app.backend.isShared)
        let created = try RawHTTPClient.request(
            port: app.port, method: "POST", path: "/albums", headers: ["Content-Type": "application/json"],
            body: Array(#"{"title":"Blue Train","artist":"John Coltrane"}"#.utf8))
        #expect(created.status == 201)
        let list = try RawHTTPClient.request(port: app.port, path: "/albums")
        #expect(list.status == 200 && list.text.contains("Blue Train"))
        #expect(try RawHTTPClient.request(port: app.port, path: "/readyz").status == 200)
        let metrics = try RawHTTPClient.request(port: app.port, path: "/metrics").text
        #expect(metrics.contains("bluelibrary_db_pool_open_connections"))
        #expect(!metrics.contains("bluelibrary_db_reader_waits_total"), "SQLite's metrics are SQLite's")
    }

    @Test func readyzFollowsTheDatabaseAndHealthzDoesNot() throws {
        let cluster = try PostgresServer()
        let app = try Self.app(try cluster.makeDatabase())
        app.start()
        defer { app.shutdown() }
        #expect(try RawHTTPClient.request(port: app.port, path: "/readyz").status == 200)
        try cluster.stop()
        let down = try RawHTTPClient.request(port: app.port, path: "/readyz")
        #expect(down.status == 503 && down.header("Retry-After") != nil)
        #expect(down.text.contains("database-unavailable"))
        #expect(try RawHTTPClient.request(port: app.port, path: "/healthz").status == 200)
        let list = try RawHTTPClient.request(port: app.port, path: "/albums")
        #expect(list.status == 503 && list.header("Retry-After") != nil, "never 500: \(list.status) \(list.text)")
        #expect(list.text.contains("urn:bluelibrary:problem:database-unavailable"))
        try cluster.start()
        #expect(eventually(timeout: .seconds(20), pollingEvery: .milliseconds(100)) {
            (try? RawHTTPClient.request(port: app.port, path: "/readyz").status) == 200
        })
        #expect(try RawHTTPClient.request(port: app.port, path: "/albums").status == 200, "service resumes by itself")
    }

    @Test func anUnavailableDependencyAnywhereIs503WithRetryAfter() throws {
        let renderer = BlueLibraryApp.errorRenderer(logger: JSONLogger(level: .error, sink: { _ in })) { _ in false }
        let request = HTTPRequest(method: .get, target: "/albums")
        let context = RequestContext(peerAddress: IPAddress("127.0.0.1")!)
        let exhausted = PostgresError(kind: .poolExhausted, message: "no free connection")
        for error: any Error in [
            exhausted, StorageFailure(error: .storage(UnderlyingError(exhausted))),
            LibraryError.storage(UnderlyingError(PostgresError(kind: .connection, message: "refused"))),
        ] {
            let response = renderer.unhandled(error, request, context)
            #expect(response.status == .serviceUnavailable, "\(error)")
            #expect(response.headers["Retry-After"] != nil)
        }
        // A PostgreSQL error that is no outage (a bug, a constraint) stays a 500.
        let other = renderer.unhandled(StorageFailure(error: .storage(UnderlyingError(PostgresError(kind: .other, message: "syntax")))),
                                    request, context)
        #expect(other.status == .internalServerError)
    }
}
