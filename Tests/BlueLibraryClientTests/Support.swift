import BlueLibraryClient
import BlueLibraryTestSupport
import Foundation

@testable import BlueLibraryServer

/// The real app on a free port (seeded with the tutorial's five albums) and a client for it.
final class LiveServer: Sendable {
    let app: BlueLibraryApp
    let client: BlueLibraryClient
    var port: Int { app.port }
    var url: String { "http://127.0.0.1:\(app.port)" }

    init(timeout: Double = 10, _ adjust: (inout ServeConfiguration) -> Void = { _ in }) throws {
        app = try TestApp.make(adjust)
        app.start()
        client = BlueLibraryClient(baseURL: URL(string: "http://127.0.0.1:\(app.port)")!, timeout: timeout)
    }

    deinit { app.shutdown() }

    /// A client for another port (a proxy in front of this server, or nothing at all).
    static func client(port: Int, timeout: Double = 10) -> BlueLibraryClient {
        BlueLibraryClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!, timeout: timeout)
    }

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
