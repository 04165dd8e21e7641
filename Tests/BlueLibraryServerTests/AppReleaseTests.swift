import AlbumStoreContract
import BlueLibraryTestSupport
import Foundation
import HTTPServer
import HTTPTestSupport
import Library
import Storage
import TestThreads
import Testing

@testable import BlueLibraryServer

/// An app that has shut down is freed whole once nothing holds it: its router, its store and
/// the store's checkpoint thread and connections. (A cycle through a closure kept every app a
/// test process made, with the store's threads, until the process ended.)
@Suite(.ownThreads) struct AppReleaseTests {
    @Test(arguments: [false, true])
    func aShutDownAppIsFreedWithItsStore(started: Bool) throws {
        weak var router: Router?
        weak var store: InMemoryAlbumStore?
        do {
            let parts = try InMemoryApp.make()
            router = parts.app.router
            store = parts.store
            if started { parts.app.start() }
            #expect(parts.routes.request(path: "/albums").status == 200)
            parts.app.shutdown()
        }
        // A thread of the app that is ending (a worker letting go of the request it ran) may
        // hold the last reference a moment longer; a cycle holds it for good.
        #expect(eventually { router == nil }, "the router is freed")
        #expect(eventually { store == nil }, "the store is freed")
    }

    /// On SQLite: the store and its checkpoint thread go with the app.
    @Test func aShutDownSQLiteAppEndsItsCheckpointThread() throws {
        weak var store: SQLiteAlbumStore?
        do {
            let app = try TestApp.make()
            store = (app.backend as? SQLiteBackend)?.store
            try #require(store != nil)
            app.start()
            #expect(try RawHTTPClient.request(port: app.port, method: "POST", path: "/albums", headers: ["Content-Type": "application/json"],
                                              body: Array(#"{"title": "T", "artist": "A"}"#.utf8)).status == 201)
            app.shutdown()
        }
        // As above: a thread that is ending may hold the last reference a moment; a cycle, for good.
        #expect(eventually { store == nil }, "the store is freed, and with it its checkpoint thread and connections")
    }
}

