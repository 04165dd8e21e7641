import BlueLibraryClient
import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import Testing

@testable import BlueLibraryServer

/// How a test server is locked: `.open` as a new server is (no token), or `.locked` as the
/// docs/security.md advises beyond loopback: a token, and `access.protectReads` on,
/// so every read and every write needs `Authorization: Bearer`. The client, model, replica and
/// CLI suites run their main paths against both (`@Test(arguments: ServerLock.allCases)`).
enum ServerLock: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case open, locked

    /// The token of every locked test server.
    static let token = "client-suite-token-0123456789"

    var testDescription: String { rawValue }

    /// The client's token for a server locked this way (nil: none).
    var token: String? { self == .locked ? Self.token : nil }

    /// The environment of a `bluelibrary` client command for a server at `url`.
    func environment(url: String) -> [String: String] {
        var environment = ["BLUELIBRARY_URL": url]
        if let token { environment["BLUELIBRARY_CLIENT_TOKEN"] = token }
        return environment
    }

    /// Turns `access.protectReads` on at the server on `port` (locked with `token`), so reads
    /// need the token too.
    static func protectReads(port: Int, token: String = token) throws {
        let patch = try RawHTTPClient.request(
            port: port, method: "PATCH", path: "/settings",
            headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/merge-patch+json"],
            body: Array(#"{"access": {"protectReads": true}}"#.utf8))
        guard patch.status == 200 else { throw RawHTTPClient.ClientError(description: "PATCH /settings: \(patch.status) \(patch.text)") }
        // The lock is on for reads now: a read without the token is refused.
        let read = try RawHTTPClient.request(port: port, path: "/albums")
        guard read.status == 401 else { throw RawHTTPClient.ClientError(description: "protectReads not in force: GET /albums \(read.status)") }
    }
}

/// The real app on a free port (seeded with the tutorial's five albums) and a client for it.
final class LiveServer: Sendable {
    let app: BlueLibraryApp
    let client: BlueLibraryClient
    let lock: ServerLock
    var port: Int { app.port }
    var url: String { "http://127.0.0.1:\(app.port)" }

    /// `lock` `.locked`: started with `ServerLock.token` and `access.protectReads` on; `client`
    /// (and `client(port:)`) send the token.
    init(_ lock: ServerLock = .open, timeout: Double = 60, _ adjust: (inout ServeConfiguration) -> Void = { _ in }) throws {
        self.lock = lock
        app = try TestApp.make { config in
            if lock == .locked { config.token = AccessToken(ServerLock.token) }
            adjust(&config)
        }
        app.start()
        if lock == .locked { try ServerLock.protectReads(port: app.port) }
        client = BlueLibraryClient(baseURL: URL(string: "http://127.0.0.1:\(app.port)")!, timeout: timeout, token: lock.token)
    }

    deinit { app.shutdown() }

    /// A client for another port (a proxy in front of this server, or nothing at all).
    static func client(port: Int, timeout: Double = 60) -> BlueLibraryClient {
        BlueLibraryClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!, timeout: timeout)
    }

    /// A client for another port (a proxy in front of this server) with this server's token.
    func client(port: Int, timeout: Double = 60) -> BlueLibraryClient {
        BlueLibraryClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!, timeout: timeout, token: lock.token)
    }

    /// The environment of a `bluelibrary` client command for this server (its token included).
    var environment: [String: String] { lock.environment(url: url) }

    /// Every album in library order, straight from the server.
    func allAlbums() throws -> [AlbumResource] {
        var query = AlbumPageQuery(limit: 500)
        var albums: [AlbumResource] = []
        while true {
            let page = try client.list(query)
            albums += page.items
            guard let next = page.next else { return albums }
            query = query.continuing(at: next)
        }
    }
}

extension LiveServer {
    /// This server when it is locked as `lock` says, else a new server locked that way: the
    /// server of a test parameterised by `ServerLock`.
    func with(_ lock: ServerLock) throws -> LiveServer { lock == self.lock ? self : try LiveServer(lock) }
}
